//! Population: accounts generated from the seed in chunks and inserted
//! through several connections at once.

use aggro_core::StoreError;
use aggro_core::mmo::{AccountGraph, MmoConn, MmoTarget, WorldSpec};
use std::future::Future;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

/// Accounts per insert call (50 accounts: 250 players, 25,000 items).
pub const CHUNK: u32 = 50;

/// Creates the world on `target` and inserts every account; `progress`
/// gets the accounts inserted so far now and then.
pub async fn populate<T: MmoTarget>(target: &T, world: &WorldSpec, progress: &(dyn Fn(u64) + Sync)) -> Result<(), StoreError> {
    target.create(world).await?;
    let next = AtomicU32::new(0);
    let done = AtomicU64::new(0);
    let mut conns = Vec::new();
    for _ in 0..target.populate_connections().max(1) {
        conns.push(target.connect().await?);
    }
    let workers = conns.into_iter().map(|mut conn| {
        let (next, done) = (&next, &done);
        async move {
            loop {
                let first = next.fetch_add(CHUNK, Relaxed);
                if first >= world.accounts {
                    return Ok::<(), StoreError>(());
                }
                let chunk: Vec<AccountGraph> = (first..(first + CHUNK).min(world.accounts)).map(|a| world.account_graph(a)).collect();
                conn.insert(&chunk).await?;
                progress(done.fetch_add(chunk.len() as u64, Relaxed) + chunk.len() as u64);
            }
        }
    });
    join_all(workers).await?;
    target.finish_population().await
}

/// Runs the futures concurrently on this task; the first error wins.
async fn join_all<F: Future<Output = Result<(), StoreError>>>(futures: impl IntoIterator<Item = F>) -> Result<(), StoreError> {
    let mut pending: Vec<std::pin::Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    std::future::poll_fn(|cx| {
        let mut i = 0;
        while i < pending.len() {
            match pending[i].as_mut().poll(cx) {
                std::task::Poll::Ready(Ok(())) => {
                    pending.swap_remove(i);
                }
                std::task::Poll::Ready(Err(e)) => return std::task::Poll::Ready(Err(e)),
                std::task::Poll::Pending => i += 1,
            }
        }
        if pending.is_empty() { std::task::Poll::Ready(Ok(())) } else { std::task::Poll::Pending }
    })
    .await
}
