//! What an MP4 file says about itself in its movie header: the picture's width and height (the
//! video track's `moov/trak/tkhd`, 16.16 fixed point) and the length (`moov/mvhd`, in units of its
//! timescale). A hand-written walk over the ISO base media boxes (ISO/IEC 14496-12): the three
//! boxes sit at fixed offsets, so a parsing crate would add more than it saves.
//!
//! The walk is bounded: it reads box headers at the top level (at most [`MAX_TOP_BOXES`]) until
//! `moov`, which may come after the media data (a file not made "fast start"), then reads `moov`
//! whole (it lies inside the upload, which is at most 5 MiB) and walks its children and each
//! track's. A box that claims more bytes than its parent holds ends the walk with an error: the
//! file is truncated or not an MP4.

/// What the movie header states; `None` where it states nothing usable.
#[derive(Debug, PartialEq, Eq, Default)]
pub struct Mp4Facts {
    pub width: Option<i64>,
    pub height: Option<i64>,
    pub duration_ms: Option<i64>,
}

/// Box headers read at the top level before giving up on finding `moov`.
const MAX_TOP_BOXES: usize = 4096;

/// The facts of the MP4 file of `file_len` bytes that `read_at(offset, len)` reads (fewer bytes
/// at its end). The inner `Err` says, for people, why the bytes are not an MP4 file: no `moov`
/// box, no `mvhd` in it, a box cut short; the outer one is `read_at`'s own failure.
pub fn read<E>(
    file_len: u64,
    read_at: &mut impl FnMut(u64, u64) -> Result<Vec<u8>, E>,
) -> Result<Result<Mp4Facts, String>, E> {
    let mut at = 0u64;
    for _ in 0..MAX_TOP_BOXES {
        if at >= file_len {
            break;
        }
        let head = read_at(at, 16)?;
        let (kind, header, size) = match box_header(&head, file_len - at) {
            Ok(found) => found,
            Err(why) => return Ok(Err(why)),
        };
        if &kind == b"moov" {
            let body = read_at(at + header, size - header)?;
            if body.len() as u64 != size - header {
                return Ok(Err("the movie box (moov) is cut short".into()));
            }
            return Ok(movie(&body));
        }
        at += size;
    }
    Ok(Err("it has no movie box (moov)".into()))
}

/// A box's type, header length and whole size from the bytes at its start (`room`: bytes left in
/// its parent). Size 1 means a 64-bit size follows the type; size 0, "to the end of the parent".
fn box_header(b: &[u8], room: u64) -> Result<([u8; 4], u64, u64), String> {
    const INCOMPLETE: &str = "it is cut short (a box header is incomplete)";
    if b.len() < 8 || room < 8 {
        return Err(INCOMPLETE.into());
    }
    let kind = [b[4], b[5], b[6], b[7]];
    let (header, size) = match u32_at(b, 0) {
        0 => (8, room),
        1 if b.len() >= 16 => (16, u64_at(b, 8)),
        1 => return Err(INCOMPLETE.into()),
        n => (8, u64::from(n)),
    };
    if size < header || size > room {
        return Err(format!(
            "it is cut short (its box {} claims {size} bytes where {room} remain)",
            String::from_utf8_lossy(&kind)
        ));
    }
    Ok((kind, header, size))
}

/// A box inside another: its type and its body.
type Child<'a> = ([u8; 4], &'a [u8]);

/// The children of a box's body.
fn children(body: &[u8]) -> Result<Vec<Child<'_>>, String> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while at < body.len() {
        let rest = &body[at..];
        let (kind, header, size) = box_header(rest, rest.len() as u64)?;
        out.push((kind, &rest[header as usize..size as usize]));
        at += size as usize;
    }
    Ok(out)
}

fn movie(moov: &[u8]) -> Result<Mp4Facts, String> {
    let mut facts = Mp4Facts::default();
    let mut found_mvhd = false;
    for (kind, body) in children(moov)? {
        match &kind {
            b"mvhd" => {
                facts.duration_ms = movie_duration_ms(body)?;
                found_mvhd = true;
            }
            // The first track with a picture: an audio track's width and height are 0.
            b"trak" if facts.width.is_none() => {
                if let Some((w, h)) = track_size(body)? {
                    (facts.width, facts.height) = (Some(w), Some(h));
                }
            }
            _ => {}
        }
    }
    if !found_mvhd {
        return Err("its movie box has no movie header (mvhd)".into());
    }
    Ok(facts)
}

/// `mvhd`: version 0 has 32-bit times and duration, version 1 64-bit ones. A duration of 0 (a
/// fragmented file states its length in its fragments) or all ones (unknown) is no duration.
fn movie_duration_ms(b: &[u8]) -> Result<Option<i64>, String> {
    let short = || "its movie header (mvhd) is cut short".to_string();
    let (timescale, duration) = match b.first() {
        Some(0) if b.len() >= 20 => (u32_at(b, 12), u64::from(u32_at(b, 16))),
        Some(1) if b.len() >= 32 => (u32_at(b, 20), u64_at(b, 24)),
        Some(0 | 1) => return Err(short()),
        _ => return Err("its movie header (mvhd) has an unknown version".into()),
    };
    if timescale == 0 {
        return Err("its movie header (mvhd) has a timescale of 0".into());
    }
    let unknown = duration == 0 || duration == u64::from(u32::MAX) || duration == u64::MAX;
    Ok((!unknown).then(|| {
        let ms = u128::from(duration) * 1000 / u128::from(timescale);
        i64::try_from(ms).unwrap_or(i64::MAX)
    }))
}

/// A track's picture size from its `tkhd` (whole pixels of the 16.16 values); `None` when it
/// has no picture.
fn track_size(trak: &[u8]) -> Result<Option<(i64, i64)>, String> {
    let Some((_, tkhd)) = children(trak)?.into_iter().find(|(k, _)| k == b"tkhd") else {
        return Ok(None);
    };
    // After version and flags: times, track id, reserved and duration (20 bytes in version 0, 32
    // in version 1), then 8 reserved, layer, group, volume, 2 reserved and the 36-byte matrix.
    let at = match tkhd.first() {
        Some(0) => 4 + 20 + 16 + 36,
        Some(1) => 4 + 32 + 16 + 36,
        _ => return Err("a track header (tkhd) has an unknown version".into()),
    };
    if tkhd.len() < at + 8 {
        return Err("a track header (tkhd) is cut short".into());
    }
    let (w, h) = (u32_at(tkhd, at) >> 16, u32_at(tkhd, at + 4) >> 16);
    Ok((w > 0 && h > 0).then_some((i64::from(w), i64::from(h))))
}

/// The big-endian u32 at `at`; callers check the length first.
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    (u64::from(u32_at(b, at)) << 32) | u64::from(u32_at(b, at + 4))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts_of(file: &[u8]) -> Result<Mp4Facts, String> {
        let read_at = &mut |at: u64, len: u64| {
            let start = (at as usize).min(file.len());
            let end = (start + len as usize).min(file.len());
            Ok::<_, ()>(file[start..end].to_vec())
        };
        read(file.len() as u64, read_at).unwrap_or_else(|()| Err("unreadable".into()))
    }

    #[test]
    fn the_fixture_video_states_its_size_and_length() {
        let file = include_bytes!("../../fixtures/media/store-loop.mp4");
        assert_eq!(
            facts_of(file),
            Ok(Mp4Facts {
                width: Some(1280),
                height: Some(720),
                duration_ms: Some(12000)
            })
        );
    }

    #[test]
    fn a_cut_file_is_not_an_mp4() {
        let file = include_bytes!("../../fixtures/media/store-loop.mp4");
        assert!(facts_of(&file[..100]).is_err());
        assert!(facts_of(&file[..32]).is_err());
        assert!(facts_of(b"\0\0\0\x18ftypmp42\0\0\0\0mp42isom").is_err());
    }
}
