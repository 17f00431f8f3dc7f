//! Connecting to network targets: one place for the timeout, Nagle and the
//! wording of connection errors.

use aggro_core::{ErrorClass, StoreError};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

/// How long a connection attempt may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Connects to `addr` (`HOST:PORT`) with Nagle off; `what` names the
/// service in errors ("redis", "DynamoDB endpoint").
pub async fn connect(what: &str, addr: &str) -> Result<(OwnedReadHalf, OwnedWriteHalf), StoreError> {
    let stream = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr))
        .await
        .map_err(|_| StoreError::new(ErrorClass::Connect, format!("no answer from {what} at {addr} within 5 s")))?
        .map_err(|e| StoreError::new(ErrorClass::Connect, format!("cannot connect to {what} at {addr}: {e}")))?;
    stream.set_nodelay(true).map_err(|e| StoreError::new(ErrorClass::Connect, format!("{what} at {addr}: {e}")))?;
    Ok(stream.into_split())
}
