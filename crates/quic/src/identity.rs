//! The host's certificate. QUIC always encrypts, so a host needs a certificate before its first
//! viewer; framewire makes a self-signed one on first run and keeps it, with its key, in the
//! user's config directory. Viewers check it by its SHA-256 fingerprint, which the host prints in
//! its link. The certificate is ECDSA P-256 and valid for 13 days, which is what a browser
//! accepts for WebTransport's `serverCertificateHashes`; it is made again when less than a day
//! is left (the fingerprint then changes, and the new link says so).

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use anyhow::{bail, Context};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tracing::info;

const CERT_FILE: &str = "quic-cert.pem";
const KEY_FILE: &str = "quic-key.pem";
/// When the certificate runs out (unix seconds): kept beside it so it need not be parsed.
const EXPIRES_FILE: &str = "quic-cert.expires";
const VALID_DAYS: i64 = 13;
const RENEW_WITHIN_SECS: i64 = 24 * 3600;

/// SHA-256 of a certificate (DER).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint(pub [u8; 32]);

impl Fingerprint {
    pub fn of(cert_der: &[u8]) -> Fingerprint {
        let d = ring::digest::digest(&ring::digest::SHA256, cert_der);
        Fingerprint(d.as_ref().try_into().expect("SHA-256 is 32 bytes"))
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fingerprint({self})")
    }
}

/// 64 hex digits, with or without `:` between bytes.
impl FromStr for Fingerprint {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> anyhow::Result<Fingerprint> {
        let hex: String = s.chars().filter(|&c| c != ':').collect();
        if hex.len() != 64 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
            bail!("a certificate fingerprint is 64 hex digits (SHA-256), got {s:?}");
        }
        let mut out = [0u8; 32];
        for (i, b) in out.iter_mut().enumerate() {
            *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("checked hex");
        }
        Ok(Fingerprint(out))
    }
}

/// framewire's config directory: `$FRAMEWIRE_CONFIG_DIR`, else `$XDG_CONFIG_HOME/framewire`,
/// else `~/.config/framewire`.
pub fn config_dir() -> anyhow::Result<PathBuf> {
    if let Some(d) = std::env::var_os("FRAMEWIRE_CONFIG_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(d).join("framewire"));
    }
    match std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        Some(h) => Ok(PathBuf::from(h).join(".config").join("framewire")),
        None => bail!("no config directory: set FRAMEWIRE_CONFIG_DIR or HOME"),
    }
}

/// The host's certificate and key.
pub struct Identity {
    pub cert: CertificateDer<'static>,
    pub key: PrivateKeyDer<'static>,
    pub fingerprint: Fingerprint,
    /// Where it is kept.
    pub dir: PathBuf,
}

impl Identity {
    /// The certificate kept in `dir`, or a new one (made and saved) when there is none or it
    /// runs out within a day.
    pub fn load_or_create(dir: &Path) -> anyhow::Result<Identity> {
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        let expires = fs::read_to_string(dir.join(EXPIRES_FILE))
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok());
        if expires.is_some_and(|e| e - now > RENEW_WITHIN_SECS) {
            match Identity::load(dir) {
                Ok(id) => return Ok(id),
                Err(e) => {
                    info!(error = %e, dir = %dir.display(), "QUIC certificate unreadable; making a new one")
                }
            }
        }
        Identity::create(dir)
    }

    fn load(dir: &Path) -> anyhow::Result<Identity> {
        let cert = CertificateDer::from_pem_file(dir.join(CERT_FILE))
            .with_context(|| format!("reading {}", dir.join(CERT_FILE).display()))?;
        let key = PrivateKeyDer::from_pem_file(dir.join(KEY_FILE))
            .with_context(|| format!("reading {}", dir.join(KEY_FILE).display()))?;
        Ok(Identity {
            fingerprint: Fingerprint::of(&cert),
            cert,
            key,
            dir: dir.to_path_buf(),
        })
    }

    fn create(dir: &Path) -> anyhow::Result<Identity> {
        fs::create_dir_all(dir)
            .with_context(|| format!("creating the config directory {}", dir.display()))?;
        let key = rcgen::KeyPair::generate().context("making a P-256 key")?;
        let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
        let mut params = rcgen::CertificateParams::new(names).context("certificate names")?;
        let now = time::OffsetDateTime::now_utc();
        params.not_before = now - time::Duration::hours(1);
        params.not_after = now + time::Duration::days(VALID_DAYS);
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "framewire host");
        let cert = params
            .self_signed(&key)
            .context("signing the certificate")?;
        write_private(&dir.join(KEY_FILE), key.serialize_pem().as_bytes())?;
        fs::write(dir.join(CERT_FILE), cert.pem())
            .with_context(|| format!("writing {}", dir.join(CERT_FILE).display()))?;
        fs::write(
            dir.join(EXPIRES_FILE),
            params.not_after.unix_timestamp().to_string(),
        )?;
        let cert = cert.der().clone();
        let fingerprint = Fingerprint::of(&cert);
        info!(dir = %dir.display(), %fingerprint, "made a QUIC certificate (valid {VALID_DAYS} days)");
        Ok(Identity {
            cert,
            key: PrivateKeyDer::try_from(key.serialize_der())
                .map_err(|e| anyhow::anyhow!("key: {e}"))?,
            fingerprint,
            dir: dir.to_path_buf(),
        })
    }
}

/// Writes a file only its owner can read (the private key).
fn write_private(path: &Path, data: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    f.write_all(data)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_parse_with_or_without_colons_and_print_back() {
        let hex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
        let f: Fingerprint = hex.parse().unwrap();
        assert_eq!(f.to_string(), hex);
        let colons: String = hex
            .as_bytes()
            .chunks(2)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect::<Vec<_>>()
            .join(":");
        assert_eq!(colons.parse::<Fingerprint>().unwrap(), f);
        assert!("abc".parse::<Fingerprint>().is_err());
        assert!(hex.replace('0', "g").parse::<Fingerprint>().is_err());
    }

    #[test]
    fn a_certificate_is_made_once_then_kept() {
        let dir = std::env::temp_dir().join(format!("fw-quic-id-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let a = Identity::load_or_create(&dir).unwrap();
        let b = Identity::load_or_create(&dir).unwrap();
        assert_eq!(
            a.fingerprint, b.fingerprint,
            "the kept certificate is reused"
        );
        assert_eq!(Fingerprint::of(&b.cert), b.fingerprint);
        // One that runs out within a day is made again.
        fs::write(dir.join(EXPIRES_FILE), "0").unwrap();
        let c = Identity::load_or_create(&dir).unwrap();
        assert_ne!(c.fingerprint, a.fingerprint);
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(dir.join(KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "the key is private: {mode:o}");
        let _ = fs::remove_dir_all(&dir);
    }
}
