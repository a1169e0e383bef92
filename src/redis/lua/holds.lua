-- function: meta
-- holds: KEYS[1] a record's key (a stream, queue or schedule, in its
-- tenant's slot), ARGV[1] a budget reservation's token. Reply: 1 if the
-- record holds that reservation, else 0.
if call('HGET', KEYS[1], 'rv') == ARGV[1] then
  return 1
end
return 0
