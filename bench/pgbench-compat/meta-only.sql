-- a script of meta-commands only: each run is a transaction
\set x random(1, 10)
\sleep 100 us
