//! A Redis connection that loaders share ([`crate::pipeline`]): requests
//! are a step's commands encoded back to back, answered by one reply each;
//! the connection knows the scripts loaded on it.

use super::Link;
use super::resp::Reply;
use crate::pipeline::Pipelined;
use aggro_core::StoreError;
use std::collections::HashSet;

impl Pipelined for Link {
    type Batch = Vec<u8>;
    /// Replies the request gets.
    type Ask = usize;
    type Answer = Vec<Reply>;
    /// SHA-1s (hex) of the scripts loaded (or queued to be).
    type Known = HashSet<String>;

    async fn send(&mut self, batch: &mut Vec<u8>) -> Result<(), StoreError> {
        let c = self.conn().await?;
        c.push_encoded(batch);
        c.flush().await
    }

    async fn answer(&mut self, replies: &usize) -> Result<Vec<Reply>, StoreError> {
        let c = self.conn().await?;
        let mut answer = Vec::with_capacity(*replies);
        for _ in 0..*replies {
            answer.push(c.read().await?);
        }
        Ok(answer)
    }

    fn drop_connection(&mut self) {
        self.drop_broken();
    }

    fn discard(batch: &mut Vec<u8>) {
        batch.clear();
    }
}
