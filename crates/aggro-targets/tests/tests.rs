//! Integration tests of the targets against real servers (started by
//! scripts/services.sh, named by AGGRO_TEST_* variables).

mod mmo_leases;
mod util;
mod world_records;
