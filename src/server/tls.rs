//! TLS material: loading a certificate/key pair, and generating a self-signed development
//! certificate for localhost so that `serve` works with no flags.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use openssl::asn1::Asn1Time;
use openssl::bn::{BigNum, MsbOption};
use openssl::ec::{EcGroup, EcKey};
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::PKey;
use openssl::ssl::{SslAcceptor, SslAcceptorBuilder, SslMethod};
use openssl::x509::extension::{
    AuthorityKeyIdentifier, BasicConstraints, ExtendedKeyUsage, SubjectAlternativeName,
    SubjectKeyIdentifier,
};
use openssl::x509::{X509NameBuilder, X509};

/// Paths of a PEM certificate and its key.
#[derive(Clone, Debug)]
pub struct CertPair {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// The development certificate in `dir`: the one a previous start wrote there when it is still
/// good (this tool's, its key beside it, a month or more left), so that a `caBundle` registered
/// with it keeps working across restarts; else a new one ([`generate_dev_cert`]). `true` when
/// reused.
pub fn dev_cert(dir: &Path) -> Result<(CertPair, bool)> {
    let pair = CertPair {
        cert: dir.join("tls.crt"),
        key: dir.join("tls.key"),
    };
    if reusable(&pair) {
        return Ok((pair, true));
    }
    generate_dev_cert(dir).map(|p| (p, false))
}

/// Whether `pair` is a development certificate this tool wrote, with its own key, valid for 30
/// days more, in a folder no one else could have written it to. Anything unreadable is not.
fn reusable(pair: &CertPair) -> bool {
    if !private_to_us(pair) {
        return false;
    }
    let (Ok(cert), Ok(key)) = (std::fs::read(&pair.cert), std::fs::read(&pair.key)) else {
        return false;
    };
    let (Ok(cert), Ok(key)) = (X509::from_pem(&cert), PKey::private_key_from_pem(&key)) else {
        return false;
    };
    let ours = cert
        .subject_name()
        .entries_by_nid(Nid::COMMONNAME)
        .any(|e| e.data().as_slice() == DEV_CN.as_bytes());
    let matches = cert.public_key().is_ok_and(|p| p.public_eq(&key));
    let lasts = Asn1Time::days_from_now(30).is_ok_and(|soon| cert.not_after() > soon);
    ours && matches && lasts
}

/// Whether the pair and its folder are ours and only ours to write (the default folder is in a
/// shared `/tmp`: another user could have left a pair there for us to serve): the folder and
/// both files owned by this process's user, the folder writable by no one else, the key
/// readable by no one else.
#[cfg(unix)]
fn private_to_us(pair: &CertPair) -> bool {
    use std::os::unix::fs::MetadataExt;
    // The process's own /proc entry is owned by its effective user.
    let Ok(me) = std::fs::metadata("/proc/self").map(|m| m.uid()) else {
        return false;
    };
    let Some(dir) = pair.key.parent() else {
        return false;
    };
    let (Ok(d), Ok(k), Ok(c)) = (
        std::fs::symlink_metadata(dir),
        std::fs::symlink_metadata(&pair.key),
        std::fs::symlink_metadata(&pair.cert),
    ) else {
        return false;
    };
    d.is_dir()
        && d.uid() == me
        && d.mode() & 0o022 == 0
        && k.is_file()
        && k.uid() == me
        && k.mode() & 0o077 == 0
        && c.is_file()
        && c.uid() == me
}

#[cfg(not(unix))]
fn private_to_us(_: &CertPair) -> bool {
    false
}

/// The common name of the development certificates, by which a later start knows them.
const DEV_CN: &str = "placement-guard dev";

/// Writes a self-signed certificate for `localhost`, `127.0.0.1` and `::1` into `dir`.
/// It is its own CA, so `curl --cacert cert.pem` trusts it.
pub fn generate_dev_cert(dir: &Path) -> Result<CertPair> {
    create_private_dir(dir).with_context(|| format!("creating {}", dir.display()))?;
    let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1)?;
    let key = PKey::from_ec_key(EcKey::generate(&group)?)?;

    let mut name = X509NameBuilder::new()?;
    name.append_entry_by_nid(Nid::COMMONNAME, DEV_CN)?;
    let name = name.build();

    let mut b = X509::builder()?;
    b.set_version(2)?;
    let mut serial = BigNum::new()?;
    serial.rand(127, MsbOption::MAYBE_ZERO, false)?;
    let serial = serial.to_asn1_integer()?;
    b.set_serial_number(&serial)?;
    b.set_subject_name(&name)?;
    b.set_issuer_name(&name)?;
    b.set_pubkey(&key)?;
    let (from, to) = (Asn1Time::days_from_now(0)?, Asn1Time::days_from_now(365)?);
    b.set_not_before(&from)?;
    b.set_not_after(&to)?;
    b.append_extension(BasicConstraints::new().critical().ca().build()?)?;
    b.append_extension(ExtendedKeyUsage::new().server_auth().build()?)?;
    let ski = SubjectKeyIdentifier::new().build(&b.x509v3_context(None, None))?;
    b.append_extension(ski)?;
    let aki = AuthorityKeyIdentifier::new()
        .keyid(true)
        .build(&b.x509v3_context(None, None))?;
    b.append_extension(aki)?;
    let san = SubjectAlternativeName::new()
        .dns("localhost")
        .ip("127.0.0.1")
        .ip("::1")
        .build(&b.x509v3_context(None, None))?;
    b.append_extension(san)?;
    b.sign(&key, MessageDigest::sha256())?;
    let cert = b.build();

    let pair = CertPair {
        cert: dir.join("tls.crt"),
        key: dir.join("tls.key"),
    };
    // Written under other names and renamed into place, so that a reader (a reload, a server
    // started beside this one) never sees half a file; under a lock on the folder, so that
    // two writers at the same moment cannot leave one's certificate beside the other's key.
    let lock = std::fs::File::create(dir.join(".lock"))
        .with_context(|| format!("locking {}", dir.display()))?;
    lock.lock()
        .with_context(|| format!("locking {}", dir.display()))?;
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = |p: &Path| {
        let mut name = p.as_os_str().to_owned();
        name.push(format!(".tmp-{}-{n}", std::process::id()));
        PathBuf::from(name)
    };
    let (cert_tmp, key_tmp) = (tmp(&pair.cert), tmp(&pair.key));
    std::fs::write(&cert_tmp, cert.to_pem()?)
        .with_context(|| format!("writing {}", cert_tmp.display()))?;
    write_private(&key_tmp, &key.private_key_to_pem_pkcs8()?)?;
    std::fs::rename(&key_tmp, &pair.key)
        .with_context(|| format!("writing {}", pair.key.display()))?;
    std::fs::rename(&cert_tmp, &pair.cert)
        .with_context(|| format!("writing {}", pair.cert.display()))?;
    // Released when `lock` closes.
    drop(lock);
    Ok(pair)
}

/// The folder, created (with its parents) writable by its owner only, whatever the umask, so a
/// later start may reuse what it holds; one that exists is left as it is.
#[cfg(unix)]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

#[cfg(unix)]
fn write_private(path: &Path, data: &[u8]) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    f.write_all(data)?;
    Ok(())
}

#[cfg(not(unix))]
fn write_private(path: &Path, data: &[u8]) -> Result<()> {
    std::fs::write(path, data).with_context(|| format!("writing {}", path.display()))
}

/// When the certificate in the PEM file `cert` expires, as Unix time.
pub fn not_after_unix(cert: &Path) -> Result<i64> {
    let x = X509::from_pem(&std::fs::read(cert)?)?;
    let epoch = Asn1Time::from_unix(0)?;
    let d = epoch.diff(x.not_after())?;
    Ok(i64::from(d.days) * 86_400 + i64::from(d.secs))
}

/// Why the API server would refuse the serving certificate in `cert` now, and whether time
/// alone will mend it: expired, or not valid yet beyond five minutes of clock skew. `None`
/// while it is valid (or cannot be read: [`acceptor`] says why).
pub fn out_of_date(cert: &Path) -> Option<(String, bool)> {
    let x = X509::from_pem(&std::fs::read(cert).ok()?).ok()?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_secs();
    let at = |secs: u64| Asn1Time::from_unix(i64::try_from(secs).ok()?).ok();
    if x.not_after() < at(now)? {
        return Some((
            format!(
                "the TLS certificate {} expired on {}",
                cert.display(),
                x.not_after()
            ),
            false,
        ));
    }
    if x.not_before() > at(now + 300)? {
        return Some((
            format!(
                "the TLS certificate {} is not valid before {}",
                cert.display(),
                x.not_before()
            ),
            true,
        ));
    }
    None
}

/// An acceptor for `pair` (TLS 1.2+, Mozilla intermediate settings). Errors are one line that
/// names the file, not OpenSSL's error stack.
pub fn acceptor(pair: &CertPair) -> Result<SslAcceptorBuilder> {
    let read = |what: &str, p: &Path| {
        std::fs::read(p)
            .map_err(|e| anyhow::anyhow!("cannot read the TLS {what} {}: {e}", p.display()))
    };
    let key_pem = read("key", &pair.key)?;
    let cert_pem = read("certificate", &pair.cert)?;
    let key = openssl::pkey::PKey::private_key_from_pem(&key_pem).map_err(|_| {
        anyhow::anyhow!(
            "the TLS key {} is not a PEM private key",
            pair.key.display()
        )
    })?;
    let chain = X509::stack_from_pem(&cert_pem)
        .ok()
        .filter(|c| !c.is_empty())
        .ok_or_else(|| {
            anyhow::anyhow!(
                "the TLS certificate {} holds no PEM certificate",
                pair.cert.display()
            )
        })?;
    let mut b = SslAcceptor::mozilla_intermediate_v5(SslMethod::tls_server())?;
    b.set_private_key(&key)?;
    b.set_certificate(&chain[0])?;
    for extra in &chain[1..] {
        b.add_extra_chain_cert(extra.clone())?;
    }
    b.check_private_key().map_err(|_| {
        anyhow::anyhow!(
            "the TLS key {} does not match the certificate {}",
            pair.key.display(),
            pair.cert.display()
        )
    })?;
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A restart keeps the certificate a registered `caBundle` trusts; a pair whose key is not
    /// the certificate's (a torn write, a hand edit) or a certificate another tool wrote there
    /// is replaced.
    #[test]
    fn a_good_dev_cert_is_reused_and_anything_else_replaced() {
        let dir = std::env::temp_dir().join(format!("pg-devcert-reuse-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (pair, reused) = dev_cert(&dir).unwrap();
        assert!(!reused);
        let first = std::fs::read(&pair.cert).unwrap();
        let (_, reused) = dev_cert(&dir).unwrap();
        assert!(reused);
        assert_eq!(std::fs::read(&pair.cert).unwrap(), first);
        // A folder others may write to: what it holds may be theirs.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
            let (_, reused) = dev_cert(&dir).unwrap();
            assert!(!reused);
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
            let (_, reused) = dev_cert(&dir).unwrap();
            assert!(reused);
        }
        let first = std::fs::read(&pair.cert).unwrap();
        // Another key beside the certificate.
        let other = dir.join("other");
        let stranger = generate_dev_cert(&other).unwrap();
        std::fs::copy(&stranger.key, &pair.key).unwrap();
        let (_, reused) = dev_cert(&dir).unwrap();
        assert!(!reused);
        assert_ne!(std::fs::read(&pair.cert).unwrap(), first);
        // A certificate with another subject, with its own key.
        let (foreign, key) = self_signed("webhook.example", 365);
        std::fs::write(&pair.cert, &foreign).unwrap();
        std::fs::write(&pair.key, key).unwrap();
        let (_, reused) = dev_cert(&dir).unwrap();
        assert!(!reused);
        assert_ne!(std::fs::read(&pair.cert).unwrap(), foreign);
        // Ours, but with less than 30 days left: replaced before it expires under a
        // registered caBundle; with more, kept.
        for (days, kept) in [(29, false), (31, true)] {
            let (cert, key) = self_signed(DEV_CN, days);
            std::fs::write(&pair.cert, &cert).unwrap();
            std::fs::write(&pair.key, key).unwrap();
            let (_, reused) = dev_cert(&dir).unwrap();
            assert_eq!(reused, kept, "{days} days left");
            assert_eq!(std::fs::read(&pair.cert).unwrap() == cert, kept);
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    /// A self-signed certificate for `cn` valid for `days` more, and its key (PEM).
    fn self_signed(cn: &str, days: u32) -> (Vec<u8>, Vec<u8>) {
        let now = Asn1Time::days_from_now(0).unwrap();
        self_signed_between(cn, &now, &Asn1Time::days_from_now(days).unwrap())
    }

    fn self_signed_between(cn: &str, from: &Asn1Time, to: &Asn1Time) -> (Vec<u8>, Vec<u8>) {
        let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).unwrap();
        let key = PKey::from_ec_key(EcKey::generate(&group).unwrap()).unwrap();
        let mut name = X509NameBuilder::new().unwrap();
        name.append_entry_by_nid(Nid::COMMONNAME, cn).unwrap();
        let name = name.build();
        let mut b = X509::builder().unwrap();
        b.set_subject_name(&name).unwrap();
        b.set_issuer_name(&name).unwrap();
        b.set_pubkey(&key).unwrap();
        b.set_not_before(from).unwrap();
        b.set_not_after(to).unwrap();
        b.sign(&key, MessageDigest::sha256()).unwrap();
        (
            b.build().to_pem().unwrap(),
            key.private_key_to_pem_pkcs8().unwrap(),
        )
    }

    /// A certificate the API server would refuse now: expired for good, or not valid yet
    /// (beyond five minutes of clock skew) until its time comes.
    #[test]
    fn out_of_date_says_why_and_whether_time_mends_it() {
        let dir = std::env::temp_dir().join(format!("pg-outofdate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("tls.crt");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let at = |secs: i64| Asn1Time::from_unix(secs).unwrap();
        // (not before, not after, what is said: a part of the reason, and whether time mends it)
        type Said = Option<(&'static str, bool)>;
        let cases: [(i64, i64, Said); 4] = [
            (now - 60, now + 86_400, None),
            (now + 60, now + 86_400, None),
            (
                1_577_836_800,
                1_580_515_200,
                Some(("expired on Feb  1 00:00:00 2020 GMT", false)),
            ),
            (
                now + 3_600,
                now + 86_400,
                Some(("is not valid before", true)),
            ),
        ];
        for (from, to, want) in cases {
            let (cert, _) = self_signed_between("webhook", &at(from), &at(to));
            std::fs::write(&file, cert).unwrap();
            let got = out_of_date(&file);
            match want {
                None => assert_eq!(got, None, "{from}..{to}"),
                Some((text, mends)) => {
                    let (why, m) = got.unwrap();
                    assert!(why.contains(text), "{why}");
                    assert_eq!(m, mends, "{why}");
                }
            }
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn dev_certs_written_at_once_into_one_folder_end_as_one_pair() {
        // Without the lock, one run in a few left a certificate beside another writer's key.
        let dir = std::env::temp_dir().join(format!("pg-devcert-race-{}", std::process::id()));
        for _ in 0..10 {
            let writers: Vec<_> = (0..6)
                .map(|_| {
                    let dir = dir.clone();
                    std::thread::spawn(move || generate_dev_cert(&dir))
                })
                .collect();
            let pairs: Vec<CertPair> = writers
                .into_iter()
                .map(|w| w.join().unwrap().unwrap())
                .collect();
            // One writer's pair in the end, whole: never a certificate beside another's key.
            for pair in &pairs {
                acceptor(pair).unwrap();
            }
            let left: Vec<_> = std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.contains(".tmp-"))
                .collect();
            assert!(left.is_empty(), "{left:?}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn dev_cert_loads_and_names_localhost() {
        let dir = std::env::temp_dir().join(format!("pg-tls-test-{}", std::process::id()));
        let pair = generate_dev_cert(&dir).unwrap();
        acceptor(&pair).unwrap();
        let cert = X509::from_pem(&std::fs::read(&pair.cert).unwrap()).unwrap();
        let names: Vec<String> = cert
            .subject_alt_names()
            .unwrap()
            .iter()
            .map(|n| {
                n.dnsname()
                    .map(str::to_string)
                    .or_else(|| n.ipaddress().map(|ip| format!("{ip:?}")))
                    .unwrap_or_default()
            })
            .collect();
        assert_eq!(names[0], "localhost");
        assert_eq!(names.len(), 3);
        // Broken pairs: one line naming the file.
        let missing = CertPair {
            cert: pair.cert.clone(),
            key: dir.join("missing.key"),
        };
        let e = acceptor(&missing).err().unwrap().to_string();
        assert!(
            e.starts_with("cannot read the TLS key ")
                && e.ends_with("missing.key: No such file or directory (os error 2)"),
            "{e}"
        );
        let swapped = CertPair {
            cert: pair.key.clone(),
            key: pair.key.clone(),
        };
        let e = format!("{:#}", acceptor(&swapped).err().unwrap());
        assert!(
            e.contains("holds no PEM certificate") && !e.contains('\n'),
            "{e}"
        );
        std::fs::remove_dir_all(dir).ok();
    }
}
