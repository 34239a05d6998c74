//! TLS to PostgreSQL, with rustls: which connections use it (the URL's `sslmode`) and the
//! certificates the server's is checked against (the URL's `sslrootcert`, else
//! `$PGSSLROOTCERT`, else the system's roots), as libpq reads them.
//!
//! `sslmode=require`, `verify-ca` and `verify-full` connect over TLS only, and always check
//! the server's certificate and its name (libpq's `verify-full`: a TLS connection whose
//! server is not checked protects nothing from whoever sits in between). `disable`, `allow`,
//! `prefer` (libpq's default) and no `sslmode` connect without TLS.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::error::{Error, Result};

/// The variable libpq reads the trusted certificates' file from.
const ROOT_CERT_VAR: &str = "PGSSLROOTCERT";

/// A URL, made ready for `tokio-postgres` (which knows neither `sslrootcert` nor the
/// `verify-*` modes), and whether and how it connects over TLS.
#[derive(Debug, PartialEq)]
pub(super) struct Parsed {
    /// The URL without `sslrootcert`, its `verify-*` mode written `require`.
    pub url: String,
    /// `Some` when connections must use TLS: the trusted certificates' file, if named.
    pub tls: Option<Option<PathBuf>>,
}

/// Reads `sslmode` and `sslrootcert` from a `postgres://` URL's query (other forms are left
/// as they are, without TLS).
pub(super) fn parse(url: &str) -> Parsed {
    let Some((base, query)) = url.split_once('?') else {
        return Parsed {
            url: url.to_owned(),
            tls: None,
        };
    };
    let (mut kept, mut tls, mut root) = (Vec::new(), false, None);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match (key, value) {
            ("sslrootcert", value) => root = Some(decode(value)),
            ("sslmode", "require" | "verify-ca" | "verify-full") => {
                tls = true;
                kept.push("sslmode=require".to_owned());
            }
            ("sslmode", "allow") => kept.push("sslmode=prefer".to_owned()),
            _ => kept.push(pair.to_owned()),
        }
    }
    let url = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    let root = root
        .filter(|r| r != "system")
        .or_else(|| std::env::var(ROOT_CERT_VAR).ok().filter(|r| !r.is_empty()))
        .map(PathBuf::from);
    Parsed {
        url,
        tls: tls.then_some(root),
    }
}

/// `%XX` escapes decoded (a path in a URL).
fn decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The TLS connector: the server's certificate checked against `root`'s certificates (PEM),
/// or the system's.
pub(super) fn connector(root: Option<&Path>) -> Result<MakeRustlsConnect> {
    let mut roots = RootCertStore::empty();
    match root {
        Some(path) => {
            let certs = CertificateDer::pem_file_iter(path)
                .and_then(|certs| certs.collect::<std::result::Result<Vec<_>, _>>())
                .map_err(|e| {
                    Error::msg(format!(
                        "session store: cannot read the trusted certificates in {}: {e}",
                        path.display()
                    ))
                })?;
            let (added, _) = roots.add_parsable_certificates(certs);
            if added == 0 {
                return Err(Error::msg(format!(
                    "session store: {} holds no certificate to trust",
                    path.display()
                )));
            }
        }
        None => {
            let native = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(native.certs);
            if roots.is_empty() {
                return Err(Error::msg(format!(
                    "session store: TLS to PostgreSQL needs certificates to trust, and the \
                     system has none: name a file with `sslrootcert=` in the URL or \
                     ${ROOT_CERT_VAR}"
                )));
            }
        }
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::msg(format!("session store: TLS: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_says_whether_and_how_tls_is_used() {
        let plain = parse("postgres://u@h/db");
        assert_eq!(plain.url, "postgres://u@h/db");
        assert_eq!(plain.tls, None);
        let prefer = parse("postgres://u@h/db?sslmode=prefer&connect_timeout=5");
        assert_eq!(
            prefer.url,
            "postgres://u@h/db?sslmode=prefer&connect_timeout=5"
        );
        assert_eq!(prefer.tls, None);
        let full = parse("postgres://u@h/db?sslmode=verify-full&sslrootcert=%2Ftmp%2Fca%20x.pem");
        assert_eq!(full.url, "postgres://u@h/db?sslmode=require");
        assert_eq!(full.tls, Some(Some(PathBuf::from("/tmp/ca x.pem"))));
        let system = parse("postgres://u@h/db?sslrootcert=system&sslmode=require");
        assert_eq!(system.url, "postgres://u@h/db?sslmode=require");
        assert!(system.tls.is_some());
        assert_eq!(
            parse("postgres://u@h/db?sslmode=allow").url,
            "postgres://u@h/db?sslmode=prefer"
        );
    }

    #[test]
    fn a_file_with_no_certificate_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.pem");
        std::fs::write(&path, "not a certificate").unwrap();
        let e = connector(Some(&path)).err().unwrap().to_string();
        assert!(
            e.contains("empty.pem") && e.contains("no certificate"),
            "{e}"
        );
        let missing = dir.path().join("missing.pem");
        let e = connector(Some(&missing)).err().unwrap().to_string();
        assert!(e.contains("missing.pem"), "{e}");
    }
}
