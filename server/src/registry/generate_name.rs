//! `metadata.generateName`: a prefix cut to 58 characters plus 5 random characters.

use rand::Rng;

/// The alphabet of generated suffixes (no vowels, no confusable characters).
pub const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
/// The longest prefix kept.
pub const MAX_PREFIX: usize = 58;
/// The length of the random suffix.
pub const SUFFIX_LEN: usize = 5;

/// Generates a name from a `generateName` prefix.
pub fn generate(prefix: &str) -> String {
    let mut cut = prefix.to_string();
    if cut.len() > MAX_PREFIX {
        let mut end = MAX_PREFIX;
        while !cut.is_char_boundary(end) {
            end -= 1;
        }
        cut.truncate(end);
    }
    let mut rng = rand::rng();
    for _ in 0..SUFFIX_LEN {
        cut.push(ALPHABET[rng.random_range(0..ALPHABET.len())] as char);
    }
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_and_appends() {
        let n = generate(&"a".repeat(70));
        assert_eq!(n.len(), 63);
        assert!(n[58..].bytes().all(|c| ALPHABET.contains(&c)));
        assert!(generate("web-").starts_with("web-"));
    }
}
