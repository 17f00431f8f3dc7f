//! LoadPlayer's lease is real on every target: a second game server cannot
//! load a leased player, cannot write it (change sets are fenced), and gets
//! it once the first server dies without releasing and the lease runs out.

use super::util::{runtime, service};
use aggro_core::mmo::*;
use aggro_core::{ErrorClass, StoreError};
use aggro_targets::{MmoVisitor, open_mmo};
use std::time::Duration;

/// How long the test's leases last.
const LEASE_MS: u64 = 1_500;

struct LeaseTest;

fn lease(owner: u64) -> Lease {
    let now = now_ms();
    Lease { owner, now_ms: now, until_ms: now + LEASE_MS }
}

fn set(owner: u64, core: &PlayerCore, items: Vec<Item>, release: bool) -> ChangeSet {
    let now = now_ms();
    ChangeSet {
        owner,
        now_ms: now,
        lease_until_ms: now + LEASE_MS,
        players: vec![PlayerWrite { core: core.clone(), release }],
        put_items: items,
        ..ChangeSet::default()
    }
}

fn class<T>(r: Result<T, StoreError>) -> ErrorClass {
    match r {
        Ok(_) => panic!("expected a refusal"),
        Err(e) => e.class,
    }
}

impl MmoVisitor for LeaseTest {
    type Output = ();

    async fn visit<T: MmoTarget>(self, target: T) {
        let world = WorldSpec { items_per_player: 3, ..WorldSpec::paper(2, 9) };
        target.create(&world).await.unwrap();
        let mut a = target.connect().await.unwrap();
        a.insert(&[world.account_graph(0), world.account_graph(1)]).await.unwrap();
        target.finish_population().await.unwrap();
        let mut b = target.connect().await.unwrap();
        let (server_a, server_b) = (0xa1, 0xb2);

        let loaded = a.load_player(3, lease(server_a)).await.unwrap();
        assert_eq!(loaded.items.len(), 3);
        assert_eq!(class(b.load_player(3, lease(server_b)).await), ErrorClass::Locked, "a second server loaded a leased player");
        a.load_player(3, lease(server_a)).await.expect("the holder may load its own player again");

        // B cannot write A's player, and nothing of its set lands.
        let mut stolen = loaded.core.clone();
        stolen.item_count += 1;
        let extra = new_item(&mut aggro_core::rng::Rng::seeded(1), &world, 1_000_000, 3, 3);
        assert_eq!(class(b.write(&set(server_b, &stolen, vec![extra.clone()], false)).await), ErrorClass::Locked);
        let scan = target.scan().await.unwrap();
        assert_eq!(scan.items.iter().filter(|i| i.1 == 3).count(), 3, "a refused change set wrote an item");

        // A dies holding the lease; once it runs out, B gets the player.
        drop(a);
        tokio::time::sleep(Duration::from_millis(LEASE_MS + 300)).await;
        let taken = b.load_player(3, lease(server_b)).await.expect("an expired lease is free");
        // A comes back with its stale state: fenced out.
        let mut a = target.connect().await.unwrap();
        assert_eq!(class(a.write(&set(server_a, &loaded.core, vec![], false)).await), ErrorClass::Locked);

        // B writes and releases; the world is consistent and no lease is held.
        let mut core = taken.core.clone();
        core.item_count += 1;
        core.slot_end += 1;
        b.write(&set(server_b, &core, vec![extra], true)).await.unwrap();
        let scan = target.scan().await.unwrap();
        let p3 = scan.players.iter().find(|p| p.id == 3).unwrap();
        assert_eq!(p3.item_count, 4);
        assert_eq!(scan.items.iter().filter(|i| i.1 == 3).count(), 4);
        assert!(p3.lease_until_ms.is_none_or(|u| u <= now_ms()), "the lease was not released");
        a.load_player(3, lease(server_a)).await.expect("a released player is free");
    }
}

fn check(url: &str) {
    runtime().block_on(open_mmo(&aggro_targets::TargetUrl::parse(url).unwrap(), LeaseTest)).unwrap();
}

#[test]
fn stackdb_leases_are_real() {
    let dir = tempfile::tempdir().unwrap();
    check(&format!("stackdb:{}", dir.path().join("w").display()));
}

#[test]
fn sqlite_leases_are_real() {
    let dir = tempfile::tempdir().unwrap();
    check(&format!("sqlite:{}", dir.path().join("w.db").display()));
}

#[test]
#[ignore = "needs PostgreSQL: bash scripts/test.sh services runs it"]
fn postgres_leases_are_real() {
    if let Some(url) = service("AGGRO_TEST_POSTGRES") {
        check(&url);
    }
}

#[test]
#[ignore = "needs Redis: bash scripts/test.sh services runs it"]
fn redis_leases_are_real() {
    if let Some(url) = service("AGGRO_TEST_REDIS") {
        // Database 3: apart from the round-trip tests' data.
        check(&format!("{url}/3"));
    }
}

#[test]
#[ignore = "needs a DynamoDB-API server (moto): bash scripts/test.sh services runs it"]
fn dynamodb_leases_are_real() {
    if let Some(url) = service("AGGRO_TEST_DYNAMODB") {
        check(&format!("{url}/aggro_mmo_leases"));
    }
}
