-- function: meta
-- arguments: token
-- holds: KEYS[1] a record's key (a stream, queue or schedule, in its
-- tenant's slot), `token` a budget reservation's token. Reply: 1 if the
-- record holds that reservation, else 0.
if call('HGET', KEYS[1], 'rv') == token then
  return 1
end
return 0
