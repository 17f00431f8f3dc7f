//! The decoders' fuzz entry points, shared by the cargo-fuzz targets
//! (`fuzz/`) and the corpus test that runs in CI (`tests/decoders.rs`).

use crate::codec::msg::{ClientRpc, Input, ServerRpc, SnapshotHead};
use crate::codec::view::View;
use arena_proto::{Client, ConnectToken, Secret, Server, ServerConfig};

/// A server with one live session and that session's connected client.
pub fn connected_pair() -> (Server<u32>, Client) {
    let secret = Secret::from_passphrase("fuzz");
    let (token, key) = ConnectToken { client_id: 1, expires_at_ms: u64::MAX, nonce: 1 }.issue(&secret);
    let mut server = Server::new(ServerConfig::new(secret));
    let mut client = Client::new(token, key, 0);
    let mut buf = Vec::new();
    client.write_request(0, &mut buf);
    server.process_packet(0, 0, 7, &buf).expect("a valid request");
    for (_, accept) in server.drain_handshakes().collect::<Vec<_>>() {
        client.process_packet(0, &accept).expect("a valid accept");
    }
    (server, client)
}

/// Feeds `data` to a server (from the session's address and from another) and to a connected client.
pub fn protocol(data: &[u8]) {
    let (mut server, mut client) = connected_pair();
    let _ = server.process_packet(1, 0, 7, data);
    let _ = server.process_packet(1, 0, 8, data);
    let _ = client.process_packet(1, data);
}

/// Feeds `data` to every payload decoder, and as a snapshot to a view that already holds baselines.
pub fn payloads(data: &[u8]) {
    let _ = Input::read(data);
    let _ = ClientRpc::read(data);
    let _ = ServerRpc::read(data);
    let _ = SnapshotHead::read(data);
    let mut view = View::default();
    let _ = view.apply(1, data, 30, |_, _| {});
    let _ = view.apply(2, data, 0, |_, _| {});
}
