//! A blob checked as it is read: from a registry (the helper's pull) or from the fetch
//! cache (a layer kept there), it is refused when it runs longer than its descriptor says,
//! ends shorter, or hashes otherwise.

use std::io::Read;

use sha2::{Digest, Sha256};

use super::artifact::digest_from;

/// A blob as it is read, hashed and counted; its end is an error unless its length and
/// digest are the ones it should have.
pub(crate) struct Verified {
    body: Box<dyn Read + Send>,
    digest: String,
    size: u64,
    shown: String,
    hasher: Sha256,
    received: u64,
}

impl Verified {
    /// `body`, to be read as the blob of `digest` and `size` bytes (`shown` names where it
    /// comes from).
    pub(crate) fn new(
        body: Box<dyn Read + Send>,
        digest: &str,
        size: u64,
        shown: String,
    ) -> Verified {
        Verified {
            body,
            digest: digest.to_string(),
            size,
            shown,
            hasher: Sha256::new(),
            received: 0,
        }
    }

    fn refuse(&self, why: &str) -> std::io::Error {
        std::io::Error::other(format!(
            "{}: the blob {} {why}; nothing was installed",
            self.shown, self.digest
        ))
    }

    /// Reads what is left (past what the reader of the stream needed) and checks the whole.
    pub(crate) fn finish(mut self) -> std::io::Result<()> {
        std::io::copy(&mut self, &mut std::io::sink()).map(drop)
    }
}

impl Read for Verified {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.body.read(buf)?;
        self.received += n as u64;
        if self.received > self.size {
            let why = format!("is longer than the {} bytes its manifest says", self.size);
            return Err(self.refuse(&why));
        }
        self.hasher.update(&buf[..n]);
        if n == 0 && !buf.is_empty() {
            if self.received < self.size {
                let why = format!("ended after {} of its {} bytes", self.received, self.size);
                return Err(self.refuse(&why));
            }
            let digest = digest_from(&self.hasher.clone().finalize());
            if digest != self.digest {
                let why = format!("has the digest {digest}, not the one its manifest names");
                return Err(self.refuse(&why));
            }
        }
        Ok(n)
    }
}
