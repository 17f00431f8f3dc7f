//! The connection the Redis workloads speak through: one node's, or a cluster's routed among its
//! masters — pushed, flushed and read alike, so the mobile trio, scenario steps and the world records
//! are written once for both.

use super::cluster::Cluster;
use super::resp::{Node, Reply, server_error};
use aggro_core::StoreError;
use aggro_core::scenario::Value;

/// One node, or a cluster.
pub enum Connection {
    One(Node),
    Cluster(Box<Cluster>),
}

impl Connection {
    /// Appends a command to the pipeline.
    pub fn push(&mut self, args: &[&[u8]]) {
        match self {
            Connection::One(n) => n.push(args),
            Connection::Cluster(c) => c.push(args),
        }
    }

    /// Appends a command of `count` scenario values.
    pub fn push_values<'a>(&mut self, count: usize, args: impl Iterator<Item = &'a Value>) {
        match self {
            Connection::One(n) => n.push_values(count, args),
            Connection::Cluster(c) => c.push_values(count, args),
        }
    }

    /// Queues commands encoded elsewhere, leaving `encoded` empty.
    pub fn push_encoded(&mut self, encoded: &mut Vec<u8>) {
        match self {
            Connection::One(n) => n.push_encoded(encoded),
            Connection::Cluster(c) => c.push_encoded(encoded),
        }
    }

    /// Sends everything pushed so far.
    pub async fn flush(&mut self) -> Result<(), StoreError> {
        match self {
            Connection::One(n) => n.flush().await,
            Connection::Cluster(c) => c.flush().await,
        }
    }

    /// Reads the next reply.
    pub async fn read(&mut self) -> Result<Reply, StoreError> {
        match self {
            Connection::One(n) => n.read().await,
            Connection::Cluster(c) => c.read().await,
        }
    }

    /// Sends one command and reads its reply; an error reply is a server error.
    pub async fn call(&mut self, args: &[&[u8]]) -> Result<Reply, StoreError> {
        self.push(args);
        self.flush().await?;
        self.read().await.and_then(server_error)
    }

    /// Every node holding data: the one, or each master of the cluster.
    pub async fn masters(&mut self) -> Result<Vec<&mut Node>, StoreError> {
        match self {
            Connection::One(n) => Ok(vec![n]),
            Connection::Cluster(c) => c.masters().await,
        }
    }

    /// After a failed request: whether this connection must be dropped (one node's, out of step) or has
    /// put itself right (a cluster's drops only its broken or out-of-step nodes).
    pub fn must_drop_after_error(&mut self) -> bool {
        match self {
            Connection::One(_) => true,
            Connection::Cluster(c) => {
                c.abandon_unread();
                false
            }
        }
    }
}
