-- A bot that does nothing but its 100 ms callback: the Lua engine's own cost (docs/BENCHMARKS.md).
every(100, function() end)
