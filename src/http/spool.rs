//! Uploads streamed to disk as they arrive (issue 31 item 2): a route that takes files
//! ([`super::router::Route::spooled`], `POST /media`) never holds a body in memory. The server
//! writes the body, chunk by chunk, to a temporary file of its own (mode 0600, removed when the
//! request is done, whatever happens) while it hashes it; the handler reads the parts it needs
//! (the first bytes, a multipart part's range) and copies the file into its destination in
//! chunks. Memory per upload is a chunk, not the file.
//!
//! The same limits as an in-memory body hold (`max_body_bytes`, `body_read_timeout_secs`), and all
//! spooled bytes at once share a disk budget ([`DISK_BYTES`]), so uploads queue rather than fill
//! the disk.

use super::body::{Buffered, Held, Limits};
use super::error::ApiError;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use sha2::{Digest, Sha256};
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use tokio::io::AsyncWriteExt;

/// Bytes of uploads spooled on disk at once, all requests together.
pub const DISK_BYTES: usize = 256 * 1024 * 1024;
/// The chunk a spooled file is read in.
pub const CHUNK: usize = 64 * 1024;

/// A request body in a temporary file; the file is removed when this is dropped.
#[derive(Debug)]
pub struct Spool {
    path: PathBuf,
    len: u64,
    sha256: [u8; 32],
}

impl Spool {
    /// Bytes of the body.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The SHA-256 of the whole body, lower-case hex.
    pub fn sha256_hex(&self) -> String {
        self.sha256.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The file, for reading from the start.
    pub fn open(&self) -> std::io::Result<std::fs::File> {
        std::fs::File::open(&self.path)
    }

    /// The bytes of `start..end` (a short range: a header, the start of a file).
    pub fn read_range(&self, start: u64, end: u64) -> std::io::Result<Vec<u8>> {
        let end = end.min(self.len);
        let mut out = vec![0u8; end.saturating_sub(start) as usize];
        let mut f = self.open()?;
        f.seek(SeekFrom::Start(start))?;
        f.read_exact(&mut out)?;
        Ok(out)
    }

    /// Calls `each` with the bytes of `start..end`, in chunks of at most [`CHUNK`].
    pub fn for_each_chunk(
        &self,
        start: u64,
        end: u64,
        mut each: impl FnMut(&[u8]) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let mut f = self.open()?;
        f.seek(SeekFrom::Start(start))?;
        let mut left = end.min(self.len).saturating_sub(start);
        let mut buf = vec![0u8; CHUNK];
        while left > 0 {
            let n = (left as usize).min(CHUNK);
            f.read_exact(&mut buf[..n])?;
            each(&buf[..n])?;
            left -= n as u64;
        }
        Ok(())
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A new temporary file of this process, readable by its owner only.
fn create() -> std::io::Result<(PathBuf, std::fs::File)> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let path = std::env::temp_dir().join(format!(
        "signage-upload-{}",
        crate::random::nonsecret::hex::<16>()
    ));
    let file = options.open(&path)?;
    Ok((path, file))
}

/// Writes `body` to a temporary file within `limits` (a declared length over the limit is refused
/// before a byte is read), taking its bytes from the disk `budget` as they come.
pub async fn spool(
    body: Incoming,
    declared: Option<u64>,
    limits: Limits,
    budget: &Buffered,
) -> (Result<Spool, ApiError>, Held) {
    let mut held = Held::default();
    if declared.is_some_and(|n| n > limits.max_bytes as u64) {
        let limit = limits.max_bytes;
        return (Err(ApiError::PayloadTooLarge { limit }), held);
    }
    let secs = limits.timeout.as_secs().max(1);
    let write = write(body, declared, limits.max_bytes, budget, &mut held);
    let result = match tokio::time::timeout(limits.timeout, write).await {
        Err(_) => Err(ApiError::RequestTimeout { secs }),
        Ok(result) => result,
    };
    (result, held)
}

async fn write(
    mut body: Incoming,
    declared: Option<u64>,
    limit: usize,
    budget: &Buffered,
    held: &mut Held,
) -> Result<Spool, ApiError> {
    let failed = |e: std::io::Error| ApiError::Internal(format!("spooling an upload: {e}"));
    let (path, file) = create().map_err(failed)?;
    // From here on the file is removed however this ends.
    let mut spool = Spool {
        path,
        len: 0,
        sha256: [0; 32],
    };
    let mut file = tokio::fs::File::from_std(file);
    let mut hash = Sha256::new();
    let mut taken = declared.unwrap_or(0) as usize;
    budget.take(taken, held, None).await;
    while let Some(frame) = body.frame().await {
        let frame = frame
            .map_err(|_| ApiError::BadRequest("The request body could not be read.".into()))?;
        if let Ok(data) = frame.into_data() {
            let len = spool.len as usize + data.len();
            if len > limit {
                return Err(ApiError::PayloadTooLarge { limit });
            }
            if len > taken {
                budget.take(len - taken, held, None).await;
                taken = len;
            }
            hash.update(&data);
            file.write_all(&data).await.map_err(failed)?;
            spool.len = len as u64;
        }
    }
    file.flush().await.map_err(failed)?;
    spool.sha256 = hash.finalize().into();
    Ok(spool)
}

/// A spooled body is searched in chunks: a multipart upload is parsed without reading it whole.
impl super::multipart::Source for Spool {
    fn size(&self) -> usize {
        self.len as usize
    }

    fn find(&self, needle: &[u8], from: usize, until: usize) -> Option<usize> {
        let until = until.min(self.len as usize);
        if needle.is_empty() || from > until || until - from < needle.len() {
            return None;
        }
        let mut f = self.open().ok()?;
        f.seek(SeekFrom::Start(from as u64)).ok()?;
        // The window keeps the last `needle.len() - 1` bytes of the previous chunk, so a needle
        // across two chunks is found.
        let mut window = Vec::with_capacity(CHUNK + needle.len());
        let (mut base, mut pos) = (from, from);
        while pos < until {
            let n = (until - pos).min(CHUNK);
            let start = window.len();
            window.resize(start + n, 0);
            f.read_exact(&mut window[start..]).ok()?;
            pos += n;
            if let Some(i) = window.windows(needle.len()).position(|w| w == needle) {
                return Some(base + i);
            }
            let drop = window.len().saturating_sub(needle.len() - 1);
            window.drain(..drop);
            base += drop;
        }
        None
    }

    fn read(&self, range: std::ops::Range<usize>) -> Result<Vec<u8>, String> {
        if range.end > self.len as usize || range.start > range.end {
            return Err("the body ends early".into());
        }
        self.read_range(range.start as u64, range.end as u64)
            .map_err(|e| format!("the upload could not be read back ({e})"))
    }
}

#[cfg(test)]
mod tests {
    use super::super::multipart::{self, Source};
    use super::*;

    fn spooled(bytes: &[u8]) -> Spool {
        let (path, mut file) = create().unwrap();
        std::io::Write::write_all(&mut file, bytes).unwrap();
        Spool {
            path,
            len: bytes.len() as u64,
            sha256: Sha256::digest(bytes).into(),
        }
    }

    #[test]
    fn a_spooled_body_is_searched_across_chunks_and_parsed_like_memory() {
        // A needle straddling the first chunk's end, and a large multipart body.
        let mut body = vec![b'a'; CHUNK - 3];
        body.extend_from_slice(b"NEEDLE");
        let s = spooled(&body);
        assert_eq!(s.find(b"NEEDLE", 0, body.len()), Some(CHUNK - 3));
        assert_eq!(s.find(b"NEEDLE", 0, CHUNK), None, "not wholly inside");
        assert_eq!(s.find(b"NEEDLE", CHUNK - 2, body.len()), None);
        let path = s.path.clone();
        drop(s);
        assert!(!path.exists(), "removed when dropped");

        let mut form = b"--XY\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.png\"\r\nContent-Type: image/png\r\n\r\n".to_vec();
        let file: Vec<u8> = (0..3 * CHUNK + 17).map(|i| (i % 251) as u8).collect();
        form.extend_from_slice(&file);
        form.extend_from_slice(
            b"\r\n--XY\r\nContent-Disposition: form-data; name=x\r\n\r\n1\r\n--XY--\r\n",
        );
        let s = spooled(&form);
        let from_disk = multipart::parse_from(&s, "XY").unwrap();
        assert_eq!(from_disk, multipart::parse(&form, "XY").unwrap());
        let part = &from_disk[0];
        assert_eq!(&form[part.body.clone()], &file[..]);
        let mut copied = Vec::new();
        s.for_each_chunk(part.body.start as u64, part.body.end as u64, |c| {
            copied.extend_from_slice(c);
            Ok(())
        })
        .unwrap();
        assert_eq!(copied, file);
        assert_eq!(s.sha256_hex(), format!("{:x}", Sha256::digest(&form)));
        assert!(s.read(0..form.len() + 1).is_err());
    }
}
