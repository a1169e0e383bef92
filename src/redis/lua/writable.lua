-- function: meta
-- writable: writes nothing, but is not flagged `allow-oom`, so a server
-- at `maxmemory` refuses it (`OOM`): the health check's probe of whether
-- a primary takes writes.
return 1
