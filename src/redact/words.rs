//! Passwords stated in words, in any of the languages signage text is written in ("Das
//! WLAN-Passwort lautet x", "le mot de passe est x", "密码是 x", "كلمة المرور هي x"), and the
//! English phrasings that name a password without the word (`login: user / x`, `mysql -px`, a
//! Wi-Fi QR payload's `P:` field). One list of password words and one of the words that join a
//! password to its value: a new language is a line in each, not new code.
//!
//! English `password is x` stays with [`super::scan`] (it predates this list and hides any value
//! but a common word); the words here hide a value unless it reads as a word of the sentence (a
//! common word, or lower-case letters only: "la contraseña es obligatoria").

use super::pattern::{run_len, starts_with_ci, word_start, Match};

/// A password word (lower case) and whether it is strict: a strict word (`pass`, also a day pass
/// or a boarding pass) takes only a value that reads like a password (a lower-case letter and a
/// digit or sign); the others take any value but a word of the sentence.
const PASSWORD_WORDS: &[(&str, bool)] = &[
    ("password", false),
    ("passwort", false),
    ("kennwort", false),
    ("wlan-schlüssel", false),
    ("wifi-schlüssel", false),
    ("zugangscode", false),
    ("code wi-fi", false),
    ("code wifi", false),
    ("wi-fi code", false),
    ("wifi code", false),
    ("mot de passe", false),
    ("mdp", false),
    ("palavra-passe", false),
    ("palavra passe", false),
    ("wachtwoord", false),
    ("contraseña", false),
    ("contrasena", false),
    ("clave", false),
    ("parola d'ordine", false),
    ("senha", false),
    ("hasło", false),
    ("haslo", false),
    ("пароль", false),
    ("パスワード", false),
    ("暗証番号", false),
    ("密码", false),
    ("密碼", false),
    ("口令", false),
    ("كلمة المرور", false),
    ("كلمة السر", false),
    ("كلمة مرور", false),
    ("şifre", false),
    ("lösenord", false),
    ("passord", false),
    ("adgangskode", false),
    ("비밀번호", false),
    ("pass", true),
];

/// Words (lower case) that join a password word to its value: "is", "lautet", "est", "は", "是".
/// The password word may be followed by up to [`MAX_FILLERS`] words first ("du WiFi", "del
/// wifi", "от Wi-Fi", "for the guest network").
const JOINERS: &[&str] = &[
    "is", "was", "ist", "lautet", "war", "est", "était", "es", "era", "è", "é", "e", "to", "jest",
    "brzmi", "är", "er", "—", "–", "-", "=", "は", "是", "为", "為", "هي", "هو", "는", "은",
    "これ",
];

/// Joiners written glued to the value (`パスワードはSakura2024`): no space needs to follow.
fn glued(joiner: &str) -> bool {
    joiner.as_bytes()[0] >= 0xE3
}

const MAX_FILLERS: usize = 4;

/// The character at `at` and its length in bytes.
fn char_at(bytes: &[u8], at: usize) -> Option<(char, usize)> {
    let lead = *bytes.get(at)?;
    let len = match lead {
        0..=0x7F => 1,
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        _ => 4,
    };
    let c = std::str::from_utf8(bytes.get(at..at + len)?)
        .ok()?
        .chars()
        .next()?;
    Some((c, len))
}

fn lower(c: char) -> char {
    c.to_lowercase().next().unwrap_or(c)
}

/// The length of `word` (lower case) at `at`, in any case.
fn word_at(bytes: &[u8], at: usize, word: &str) -> Option<usize> {
    if word.is_ascii() {
        return starts_with_ci(bytes, at, word.as_bytes()).then_some(word.len());
    }
    let mut k = at;
    for w in word.chars() {
        let (c, len) = char_at(bytes, k)?;
        if lower(c) != w {
            return None;
        }
        k += len;
    }
    Some(k - at)
}

/// The bytes a password word can start with: its first byte, in either case (a letter beyond
/// ASCII and its capital share their first byte: `п` and `П`, `ş` and `Ş`).
const FIRST_BYTES: [bool; 256] = {
    let mut t = [false; 256];
    let mut k = 0;
    while k < PASSWORD_WORDS.len() {
        let b = PASSWORD_WORDS[k].0.as_bytes()[0];
        t[b as usize] = true;
        t[b.to_ascii_uppercase() as usize] = true;
        k += 1;
    }
    t
};

/// Whether a password word can start with byte `b` (a quick test before [`worded_password`]).
pub fn may_start(b: u8) -> bool {
    FIRST_BYTES[usize::from(b)]
}

fn is_letter_at(bytes: &[u8], at: usize) -> bool {
    char_at(bytes, at).is_some_and(|(c, _)| c.is_alphabetic())
}

/// A password stated in words at `i`: a password word, up to four words, a joiner or a colon,
/// and the value.
pub fn worded_password(bytes: &[u8], i: usize) -> Option<Match> {
    let first = bytes[i].to_ascii_lowercase();
    let (word, strict) = PASSWORD_WORDS.iter().find_map(|&(w, strict)| {
        if w.as_bytes()[0] != first {
            return None;
        }
        let n = word_at(bytes, i, w)?;
        Some((n, strict))
    })?;
    let mut at = i + word;
    if strict {
        // `pass`, not `passion`.
        if is_letter_at(bytes, at) {
            return None;
        }
    } else {
        // Inflections: `hasła`, `пароля`, `lösenordet`, `şifresi` (not a joiner glued to a
        // word of a script without spaces: `パスワードは`).
        while let Some((_, len)) =
            char_at(bytes, at).filter(|&(c, len)| c.is_alphabetic() && len < 3)
        {
            at += len;
        }
    }
    let mut fillers = 0;
    loop {
        at += run_len(bytes, at, |b| b == b' ');
        match bytes.get(at) {
            Some(b':') => {
                at += 1;
                break;
            }
            None | Some(b'\n') => return None,
            _ => {}
        }
        let joiner = JOINERS.iter().find_map(|j| {
            let n = word_at(bytes, at, j)?;
            let next = bytes.get(at + n).copied();
            let ends = glued(j) || matches!(next, Some(b' ' | b':'));
            ends.then_some((n, glued(j)))
        });
        if let Some((n, glued)) = joiner {
            at += n;
            let spaces = run_len(bytes, at, |b| b == b' ');
            if bytes.get(at + spaces) == Some(&b':') {
                at += spaces + 1;
            }
            if !glued && bytes.get(at) != Some(&b' ') {
                return None;
            }
            break;
        }
        // A word between the password word and its joiner ("du WiFi"), but no sentence's end.
        let n = run_len(bytes, at, |b| b != b' ' && b != b'\n');
        let filler = &bytes[at..at + n];
        // No joiner: the password right after its word (`Passwort Sommer2024!`), when it reads
        // like one (a lower-case letter and a digit: not `vergessen?`) and is not short.
        if fillers == 0
            && !strict
            && n >= 6
            && reads_like_password(filler)
            && filler.iter().any(u8::is_ascii_digit)
        {
            return value_at(bytes, i, at, strict);
        }
        if fillers == MAX_FILLERS
            || n > 24
            || filler
                .iter()
                .any(|b| b.is_ascii_digit() || matches!(b, b'.' | b'?' | b'!' | b','))
        {
            return None;
        }
        fillers += 1;
        at += n;
        if filler.ends_with(b":") {
            break;
        }
    }
    value_at(bytes, i, at, strict)
}

/// The value after a password word and its joiner, from `at` (spaces first).
fn value_at(bytes: &[u8], i: usize, mut at: usize, strict: bool) -> Option<Match> {
    at += run_len(bytes, at, |b| b == b' ');
    if let Some(&q) = bytes.get(at).filter(|&&q| q == b'"' || q == b'\'') {
        let n = run_len(bytes, at + 1, |b| b != q && b != b'\n');
        if n > 0 && bytes.get(at + 1 + n) == Some(&q) {
            return Some((at + 1 - i, at + 1 - i + n));
        }
        at += 1;
    }
    // The value ends at a space, a quote or a list's separator, and at the text of a script
    // written without spaces (`Sakura2024です`).
    let n = run_len(bytes, at, |b| {
        !b.is_ascii_whitespace() && !matches!(b, b'"' | b'\'' | b',' | b';' | b'&') && b < 0xE0
    });
    let value = &bytes[at..at + n];
    // A sentence's full stop is not part of the password (an `!` may well be).
    let n = value
        .iter()
        .rposition(|b| !matches!(b, b'.' | b')'))
        .map_or(0, |last| last + 1);
    let value = &value[..n];
    if n == 0 || is_common_word(value) || is_word_of_the_sentence(value) {
        return None;
    }
    // A loose word ("pass") takes a value only with a digit in it: "the wifi pass is guest2024",
    // not "pass to confirm_change" or "the day pass is cheap".
    if strict && !(reads_like_password(value) && value.iter().any(u8::is_ascii_digit)) {
        return None;
    }
    // A word of the sentence ("obligatoria", "спросите"), not a password.
    let text = std::str::from_utf8(value).ok()?;
    if text.chars().all(|c| c.is_alphabetic() && !c.is_uppercase()) {
        return None;
    }
    Some((at - i, at - i + n))
}

/// Capitalised words of other languages that follow "password is" in ordinary sentences (a
/// word in lower case is never taken for a password): "Das Passwort ist Pflicht".
const SENTENCE_WORDS: &[&str] = &[
    "pflicht",
    "erforderlich",
    "geheim",
    "vertraulich",
    "obligatoire",
    "confidentiel",
    "obligatorio",
    "obligatoria",
    "obbligatoria",
    "obrigatória",
    "verplicht",
    "wymagane",
];

fn is_word_of_the_sentence(value: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(value) else {
        return false;
    };
    let lower = text.to_lowercase();
    SENTENCE_WORDS.iter().any(|w| *w == lower)
}

/// `login: user / password` (or `user/password`) at `i`: the password goes.
pub fn login_pair(bytes: &[u8], i: usize) -> Option<Match> {
    let word = ["login", "logon", "credentials", "creds"]
        .into_iter()
        .find_map(|w| starts_with_ci(bytes, i, w.as_bytes()).then_some(w.len()))?;
    let mut at = i + word;
    if bytes.get(at) != Some(&b':') {
        return None;
    }
    at += 1;
    at += run_len(bytes, at, |b| b == b' ');
    let user = run_len(bytes, at, |b| b.is_ascii_graphic() && b != b'/');
    if user == 0 {
        return None;
    }
    at += user;
    at += run_len(bytes, at, |b| b == b' ');
    if bytes.get(at) != Some(&b'/') {
        return None;
    }
    at += 1;
    at += run_len(bytes, at, |b| b == b' ');
    let n = run_len(bytes, at, |b| b.is_ascii_graphic());
    (n > 0).then_some((at - i, at - i + n))
}

/// A MySQL client's password glued to its `-p` (`mysql -u root -pS3cret db`), on the command's
/// line.
pub fn command_password(bytes: &[u8], i: usize) -> Option<Match> {
    if !starts_with_ci(bytes, i, b"mysql") {
        return None;
    }
    let mut at = i + 5;
    while at + 3 < bytes.len() && bytes[at] != b'\n' {
        if bytes[at] == b' ' && bytes[at + 1] == b'-' && bytes[at + 2] == b'p' {
            let n = run_len(bytes, at + 3, |b| b.is_ascii_graphic());
            return (n > 0).then_some((at + 3 - i, at + 3 - i + n));
        }
        at += 1;
    }
    None
}

/// A Wi-Fi QR payload at `i` (`WIFI:T:WPA;S:MyNet;P:secret123;;`): its `P:` field's value
/// (`\;` escapes a `;` inside it).
pub fn wifi_qr(bytes: &[u8], i: usize) -> Option<Match> {
    if !starts_with_ci(bytes, i, b"wifi:") || !word_start(bytes, i) {
        return None;
    }
    let mut at = i + 5;
    while at < bytes.len() && !bytes[at].is_ascii_whitespace() {
        let field_start = at;
        // The field's end: an unescaped `;`.
        let mut end = at;
        while end < bytes.len() && bytes[end] != b';' && !bytes[end].is_ascii_whitespace() {
            end += if bytes[end] == b'\\' { 2 } else { 1 };
        }
        let end = end.min(bytes.len());
        if starts_with_ci(bytes, field_start, b"p:") && end > field_start + 2 {
            // A quoted password (`P:"Lobby 2026";`) runs to its closing quote.
            let from = field_start + 2;
            if bytes[from] == b'"' {
                let n = run_len(bytes, from + 1, |b| b != b'"' && b != b'\n');
                if n > 0 && bytes.get(from + 1 + n) == Some(&b'"') {
                    return Some((from + 1 - i, from + 1 + n - i));
                }
            }
            return Some((from - i, end - i));
        }
        if bytes.get(end) != Some(&b';') {
            return None;
        }
        at = end + 1;
    }
    None
}

/// Whether a value after a `Tight` name in prose reads like a password rather than
/// promotion copy: a lower-case letter and a digit or sign (`s3cret!`, not `SUMMER24` or `1`).
pub(super) fn reads_like_password(value: &[u8]) -> bool {
    value.iter().any(u8::is_ascii_lowercase)
        && value
            .iter()
            .any(|b| b.is_ascii_digit() || b.is_ascii_punctuation())
}

/// Words that follow "password is" in ordinary sentences ("The password is printed on your
/// receipt"): never taken for the password itself.
const NOT_A_PASSWORD: &[&str] = &[
    "a",
    "above",
    "also",
    "always",
    "an",
    "ask",
    "at",
    "available",
    "call",
    "check",
    "contact",
    "below",
    "blank",
    "case",
    "case-sensitive",
    "changed",
    "correct",
    "displayed",
    "easy",
    "empty",
    "expired",
    "for",
    "free",
    "given",
    "hidden",
    "in",
    "included",
    "incorrect",
    "invalid",
    "just",
    "listed",
    "long",
    "missing",
    "my",
    "needed",
    "never",
    "new",
    "not",
    "now",
    "on",
    "only",
    "optional",
    "our",
    "please",
    "posted",
    "printed",
    "private",
    "provided",
    "public",
    "required",
    "reset",
    "same",
    "secret",
    "see",
    "sensitive",
    "sent",
    "set",
    "short",
    "shown",
    "simple",
    "still",
    "strong",
    "the",
    "their",
    "too",
    "unchanged",
    "updated",
    "use",
    "valid",
    "visit",
    "weak",
    "written",
    "wrong",
    "your",
];

pub(super) fn is_common_word(word: &[u8]) -> bool {
    let end = word
        .iter()
        .rposition(|b| !matches!(b, b'.' | b'!' | b'?' | b')'))
        .map_or(0, |last| last + 1);
    let word = &word[..end];
    NOT_A_PASSWORD
        .iter()
        .any(|w| w.as_bytes().eq_ignore_ascii_case(word))
}
