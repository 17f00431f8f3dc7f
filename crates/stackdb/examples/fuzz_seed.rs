//! Writes real databases as seeds for the `open_read` fuzz target
//! (`fuzz/corpus/open_read/`): empty, small, grown by splits, compacted,
//! checkpointed and not.

use stackdb::{Compaction, Database, Options};
use std::path::Path;

fn seed(name: &str, keys: u32, rounds: u32, checkpoint: bool) -> std::io::Result<()> {
    let dir = tempfile::tempdir()?;
    let options = Options {
        initial_level: 2,
        compaction: Compaction { trigger: 1.5, pace: 0.25, min_log_bytes: 4096, ..Compaction::default() },
        ..Options::default()
    };
    let db = Database::open(dir.path(), options).map_err(std::io::Error::other)?;
    for round in 0..rounds {
        let mut w = db.begin_write();
        for k in 0..keys {
            let key = format!("key-{k}");
            if (k + round) % 7 == 0 {
                w.delete(key.as_bytes()).map_err(std::io::Error::other)?;
            } else {
                w.put(key.as_bytes(), format!("value-{round}").as_bytes()).map_err(std::io::Error::other)?;
            }
        }
        w.commit().map_err(std::io::Error::other)?;
    }
    if checkpoint {
        db.checkpoint().map_err(std::io::Error::other)?;
    }
    drop(db);
    let read = |f: &str| std::fs::read(dir.path().join(f));
    let (log, heads, dw) = (read("log")?, read("heads")?, read("heads.dw").unwrap_or_default());
    let mut input = Vec::new();
    input.extend_from_slice(&(log.len() as u32).to_le_bytes());
    input.extend_from_slice(&(heads.len() as u32).to_le_bytes());
    input.extend_from_slice(&log);
    input.extend_from_slice(&heads);
    input.extend_from_slice(&dw);
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/open_read");
    std::fs::create_dir_all(&out)?;
    std::fs::write(out.join(name), input)
}

fn main() -> std::io::Result<()> {
    seed("empty", 0, 0, false)?;
    seed("small", 5, 2, false)?;
    seed("grown", 60, 3, true)?;
    seed("compacted", 40, 30, false)?;
    println!("seeds written to fuzz/corpus/open_read/");
    Ok(())
}
