//! Parsing of `#[object(group = "…", version = "…", kind = "…", list)]`.

use syn::spanned::Spanned;

/// The keys of `#[object]`.
const KEYS: [&str; 4] = ["group", "version", "kind", "list"];

/// The parsed attribute.
pub struct ObjectAttrs {
    /// `group = "…"` (empty for core).
    pub group: Option<syn::LitStr>,
    /// `version = "…"`.
    pub version: Option<syn::LitStr>,
    /// `kind = "…"`.
    pub kind: Option<syn::LitStr>,
    /// `list`.
    pub list: bool,
    /// The span to blame for missing keys.
    pub span: proc_macro2::Span,
    /// Whether an `#[object]` attribute was present.
    pub seen: bool,
}

/// Parses every `#[object]` attribute; returns what was understood and every error found.
pub fn parse(input: &syn::DeriveInput) -> (ObjectAttrs, Option<syn::Error>) {
    let mut out = ObjectAttrs {
        group: None,
        version: None,
        kind: None,
        list: false,
        span: input.ident.span(),
        seen: false,
    };
    let mut errors: Option<syn::Error> = None;
    let push = |e: syn::Error, errors: &mut Option<syn::Error>| match errors {
        Some(all) => all.combine(e),
        None => *errors = Some(e),
    };
    let mut seen = false;
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("object")) {
        seen = true;
        out.span = attr.span();
        let result = attr.parse_nested_meta(|meta| {
            let key = meta
                .path
                .get_ident()
                .map(ToString::to_string)
                .unwrap_or_default();
            match key.as_str() {
                "group" => out.group = Some(meta.value()?.parse()?),
                "version" => out.version = Some(meta.value()?.parse()?),
                "kind" => out.kind = Some(meta.value()?.parse()?),
                "list" => out.list = true,
                _ => {
                    let fix = match closest(&key) {
                        Some(k) => format!("; did you mean `{k}`?"),
                        None => "; expected one of `group`, `version`, `kind`, `list`".to_string(),
                    };
                    push(
                        meta.error(format!("unknown key `{key}` in `#[object]`{fix}")),
                        &mut errors,
                    );
                    if meta.input.peek(syn::Token![=]) {
                        let _: syn::Expr = meta.value()?.parse()?;
                    }
                }
            }
            Ok(())
        });
        if let Err(e) = result {
            push(e, &mut errors);
        }
    }
    out.seen = seen;
    if !seen {
        push(
            syn::Error::new(
                input.ident.span(),
                "`#[derive(Object)]` needs `#[object(group = \"…\", version = \"…\", kind = \"…\")]`",
            ),
            &mut errors,
        );
    }
    (out, errors)
}

/// The key closest to a misspelt one.
fn closest(word: &str) -> Option<&'static str> {
    KEYS.iter()
        .copied()
        .filter(|k| distance(word, k) <= 2)
        .min_by_key(|k| distance(word, k))
}

/// Levenshtein distance.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}
