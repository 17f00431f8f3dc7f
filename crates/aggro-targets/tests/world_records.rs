//! World records and run logs on every target: written and read back (a
//! record replaced by a later write, every logged run kept, one workload's
//! runs forgotten alone), and forgotten
//! by a population *before* it writes any data, so a population cut short
//! never leaves a record claiming a whole world.

use super::util::{runtime, service};
use aggro_core::mmo::{MmoTarget, WorldSpec};
use aggro_core::mobile::MobileTarget;
use aggro_targets::{MmoVisitor, MobileVisitor, open_mmo, open_mobile};

/// One step of the test, each on a freshly opened target (as each aggro
/// command opens its own).
enum Step {
    /// Populate, then write two records and read the second back, and log two runs.
    PopulateAndWrite,
    /// Populate again: the record and the run log must be gone.
    PopulateAndRead,
}

impl MobileVisitor for Step {
    type Output = ();

    async fn visit<T: MobileTarget>(self, target: T) {
        target.populate(&[1, 2, 3], &|_| {}).await.expect("populate");
        assert_eq!(target.read_world("mobile").await.expect("read"), None, "{}", target.describe());
        assert_eq!(target.run_log("mobile").await.expect("run log"), Vec::<String>::new(), "{}", target.describe());
        if let Step::PopulateAndWrite = self {
            target.log_run("mobile", "a1", r#"{"run":"a1"}"#).await.expect("log");
            target.log_run("mobile", "b2", r#"{"run":"b2"}"#).await.expect("log again");
            let mut log = target.run_log("mobile").await.expect("run log");
            log.sort();
            assert_eq!(log, [r#"{"run":"a1"}"#, r#"{"run":"b2"}"#], "{}", target.describe());
            // Forgetting one workload's runs (a scenario population's) leaves the others'.
            target.log_run("scenario", "c3", r#"{"run":"c3"}"#).await.expect("log a scenario run");
            target.forget_runs("scenario").await.expect("forget");
            target.forget_runs("scenario").await.expect("forget an empty log");
            assert_eq!(target.run_log("scenario").await.expect("run log"), Vec::<String>::new(), "{}", target.describe());
            assert_eq!(target.run_log("mobile").await.expect("run log").len(), 2, "{}", target.describe());
            target.write_world("mobile", r#"{"first":1}"#).await.expect("write");
            target.write_world("mobile", r#"{"second":2}"#).await.expect("write again");
            let read = target.read_world("mobile").await.expect("read");
            assert_eq!(read.as_deref(), Some(r#"{"second":2}"#), "{}", target.describe());
        }
    }
}

/// An MMO world created over a stored record forgets it.
struct Create;

impl MmoVisitor for Create {
    type Output = ();

    async fn visit<T: MmoTarget>(self, target: T) {
        target.write_world("mmo", r#"{"old":1}"#).await.expect("write");
        assert!(target.read_world("mmo").await.expect("read").is_some());
        target.create(&WorldSpec::paper(10, 1)).await.expect("create");
        assert_eq!(target.read_world("mmo").await.expect("read"), None, "{}", MmoTarget::describe(&target));
    }
}

fn check_mobile(url: &str) {
    let rt = runtime();
    for step in [Step::PopulateAndWrite, Step::PopulateAndRead] {
        rt.block_on(open_mobile(&aggro_targets::TargetUrl::parse(url).unwrap(), step)).unwrap();
    }
}

fn check_mmo(url: &str) {
    runtime().block_on(open_mmo(&aggro_targets::TargetUrl::parse(url).unwrap(), Create)).unwrap();
}

#[test]
fn stackdb_keeps_and_forgets_world_records() {
    let dir = tempfile::tempdir().unwrap();
    check_mobile(&format!("stackdb:{}", dir.path().join("w").display()));
}

#[test]
fn sqlite_keeps_and_forgets_world_records() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("w.db").display());
    check_mobile(&url);
    check_mmo(&url);
}

#[test]
#[ignore = "needs PostgreSQL: bash scripts/test.sh services runs it"]
fn postgres_keeps_and_forgets_world_records() {
    if let Some(url) = service("AGGRO_TEST_POSTGRES") {
        check_mobile(&url);
    }
}

#[test]
#[ignore = "needs Redis: bash scripts/test.sh services runs it"]
fn redis_keeps_and_forgets_world_records() {
    if let Some(url) = service("AGGRO_TEST_REDIS") {
        // Database 5: apart from the other tests' data.
        check_mobile(&format!("{url}/5"));
        check_mmo(&format!("{url}/5"));
    }
}

#[test]
#[ignore = "needs a DynamoDB-API server (moto): bash scripts/test.sh services runs it"]
fn dynamodb_keeps_and_forgets_world_records() {
    if let Some(url) = service("AGGRO_TEST_DYNAMODB") {
        check_mobile(&format!("{url}/aggro_world_records"));
    }
}
