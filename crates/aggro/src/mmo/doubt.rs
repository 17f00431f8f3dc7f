//! A zone's release that commits but whose answer is lost, on a real stackdb store: the retry finds the
//! lease gone and drops the player, the zone's ledger keeps the push in doubt, and verify accepts the
//! store's count — where the acknowledged pushes alone would call it a mismatch.

use aggro_core::mmo::*;
use aggro_core::{ErrorClass, StoreError};
use aggro_targets::{MmoVisitor, TargetUrl, open_mmo};
use aggro_workloads::mmo::verify::verify;
use aggro_workloads::mmo::{Action, ItemLedger, Zone};

/// A connection whose first release commits and then fails as a lost answer does (a timeout).
struct LosesOneAnswer<C> {
    inner: C,
    lost: bool,
}

impl<C: MmoConn> MmoConn for LosesOneAnswer<C> {
    async fn insert(&mut self, accounts: &[AccountGraph]) -> Result<(), StoreError> {
        self.inner.insert(accounts).await
    }

    async fn login(&mut self, username: &str, now_ms: u64) -> Result<Account, StoreError> {
        self.inner.login(username, now_ms).await
    }

    async fn load_player(&mut self, id: u32, lease: Lease) -> Result<PlayerGraph, StoreError> {
        self.inner.load_player(id, lease).await
    }

    async fn roster(&mut self, guild: u32) -> Result<Roster, StoreError> {
        self.inner.roster(guild).await
    }

    async fn write(&mut self, changes: &ChangeSet) -> Result<(), StoreError> {
        self.inner.write(changes).await?;
        if !self.lost && changes.players.iter().any(|p| p.release) {
            self.lost = true;
            return Err(StoreError::new(ErrorClass::Timeout, "the commit landed; its answer was lost (test)"));
        }
        Ok(())
    }

    async fn reserve_ids(&mut self, n: u64) -> Result<u64, StoreError> {
        self.inner.reserve_ids(n).await
    }
}

struct LostRelease;

impl MmoVisitor for LostRelease {
    type Output = ();

    async fn visit<T: MmoTarget>(self, target: T) {
        let world = WorldSpec { items_per_player: 3, ..WorldSpec::paper(1, 7) };
        target.create(&world).await.unwrap();
        target.connect().await.unwrap().insert(&[world.account_graph(0)]).await.unwrap();
        target.finish_population().await.unwrap();
        let conn = LosesOneAnswer { inner: target.connect().await.unwrap(), lost: false };
        let mut zone = Zone::new(conn, world, 0x5eed, 60_000, 1);
        zone.fill(1).await.unwrap();
        let mut refused = 0;
        for action in [Action::CreateItem, Action::CreateItem, Action::EjectPlayer] {
            zone.act(action, &mut refused).await.unwrap();
        }
        let lost = zone.act(Action::EjectList, &mut refused).await.unwrap_err();
        assert_eq!(lost.class, ErrorClass::Timeout);
        // The release had committed: its retry finds the lease gone, and the zone lets the player go.
        let retry = zone.act(Action::EjectList, &mut refused).await.unwrap_err();
        assert_eq!(retry.class, ErrorClass::Locked, "{retry}");
        zone.shutdown().await.unwrap();

        let scan = target.scan().await.unwrap();
        let v = verify(&scan, &world, Some(&zone.ledger), now_ms());
        assert!(v.ok() && v.players_in_doubt == 1, "{:?}", v.lines());
        let acknowledged_only = ItemLedger { committed: zone.ledger.committed.clone(), ..ItemLedger::default() };
        let without = verify(&scan, &world, Some(&acknowledged_only), now_ms());
        assert_eq!(without.ledger_mismatches.count, 1, "the store holds the lost answer's two items: {:?}", without.lines());
    }
}

#[test]
fn a_release_whose_answer_was_lost_is_allowed_for_not_called_a_mismatch() {
    let dir = tempfile::tempdir().unwrap();
    let url = TargetUrl::parse(&format!("stackdb:{}", dir.path().display())).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(open_mmo(&url, LostRelease)).unwrap();
}
