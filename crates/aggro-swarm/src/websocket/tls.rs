//! TLS under a bot's connections (`wss://`, `https://`): rustls (ring) over the
//! counted TCP stream, so bytes, drains and the kernel's receive stamps are
//! still read off the socket itself. The server's certificate is checked
//! against Mozilla's roots (webpki-roots) and, for a test server with its
//! own certificate, a PEM file of the user's (`--ca-file`).

use super::counted::Counted;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where a swarm's TLS server is: the name its certificate must carry, and extra roots to trust.
#[derive(Clone, Debug, serde::Serialize)]
pub struct TlsTarget {
    pub host: String,
    pub ca_file: Option<PathBuf>,
}

/// A connection's bytes: plain TCP, or TLS over it.
#[derive(Debug)]
pub(super) enum Wire {
    Plain(Counted),
    Tls(Box<StreamOwned<ClientConnection, Counted>>),
}

impl Wire {
    /// The TCP stream underneath.
    pub(super) fn counted(&self) -> &Counted {
        match self {
            Wire::Plain(c) => c,
            Wire::Tls(s) => &s.sock,
        }
    }

    pub(super) fn counted_mut(&mut self) -> &mut Counted {
        match self {
            Wire::Plain(c) => c,
            Wire::Tls(s) => &mut s.sock,
        }
    }
}

impl Read for Wire {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Wire::Plain(c) => c.read(buf),
            Wire::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Wire {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Wire::Plain(c) => c.write(buf),
            Wire::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Wire::Plain(c) => c.flush(),
            Wire::Tls(s) => s.flush(),
        }
    }
}

/// A swarm's TLS client: one configuration for every bot's connections.
#[derive(Clone, Debug)]
pub(super) struct Tls {
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
}

impl Tls {
    /// The client for `target`; a CA file that cannot be read, or holds no certificate, says so.
    pub(super) fn new(target: &TlsTarget) -> io::Result<Self> {
        let mut roots = RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
        if let Some(file) = &target.ca_file {
            let added = add_pem(&mut roots, file)?;
            if added == 0 {
                return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{}: no certificate in it", file.display())));
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(io::Error::other)?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let name = ServerName::try_from(target.host.clone())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{:?} is not a TLS server name: {e}", target.host)))?;
        Ok(Self { config: Arc::new(config), name })
    }

    /// `stream` with a TLS client over it (the handshake goes as the stream is read and written).
    pub(super) fn wrap(&self, stream: Counted) -> io::Result<Wire> {
        let conn = ClientConnection::new(Arc::clone(&self.config), self.name.clone()).map_err(io::Error::other)?;
        Ok(Wire::Tls(Box::new(StreamOwned::new(conn, stream))))
    }
}

/// Adds the certificates of PEM `file` to `roots`; how many.
fn add_pem(roots: &mut RootCertStore, file: &Path) -> io::Result<usize> {
    let bad = |e: &dyn std::fmt::Display| io::Error::new(io::ErrorKind::InvalidInput, format!("{}: {e}", file.display()));
    let mut added = 0;
    for cert in CertificateDer::pem_file_iter(file).map_err(|e| bad(&e))? {
        roots.add(cert.map_err(|e| bad(&e))?).map_err(|e| bad(&e))?;
        added += 1;
    }
    Ok(added)
}
