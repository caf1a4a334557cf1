//! YAML request bodies: converted to JSON with nesting and aliasing bounded. The nesting
//! bound is checked before the parser runs, by a scan that follows libyaml's scanner.

use apimachinery::status::ApiError;
use serde_json::Value;

use super::body::{MAX_DEPTH, depth};

/// The largest number of YAML aliases accepted in one document (bounds alias expansion).
pub const MAX_YAML_ALIASES: usize = 100;

/// Finds where a YAML text first nests deeper than `max` collections, before parsing it.
///
/// The scan follows libyaml's scanner (the parser behind `serde_yaml_ng`): it finds tokens as
/// libyaml does (plain, quoted and block scalars, comments, anchors, tags, indicators) and
/// keeps libyaml's flow level and indentation stack, so a bracket inside a scalar or comment
/// never counts and every flow collection libyaml would open does. The flow level is what makes
/// libyaml's cost grow faster than linearly, so no text whose flow nesting exceeds `max`
/// reaches the parser. Block nesting (the indentation stack, plus sequences written at their
/// mapping's indentation) is counted too. Returns the zero-based line of the collection that
/// went too deep. Scanning errors libyaml would stop at are passed over: the parser stops
/// there, so what follows costs nothing.
pub fn yaml_too_deep(text: &str, max: usize) -> Option<usize> {
    YamlScan::new(text.as_bytes(), max).run()
}

/// The message go-yaml gives for nesting deeper than its limit (`max_flow_level` /
/// `max_indents`; Kubernetes' limit is 10,000, apiary's [`MAX_DEPTH`]): the line is named
/// unless it is the first.
pub fn yaml_depth_message(line: usize) -> String {
    if line == 0 {
        format!("yaml: exceeded max depth of {MAX_DEPTH}")
    } else {
        format!("yaml: line {}: exceeded max depth of {MAX_DEPTH}", line + 1)
    }
}

/// One entry of the emulated indentation stack.
struct Indent {
    /// The column of the collection.
    column: usize,
    /// Whether it is a block mapping (pushed by a key) rather than a sequence.
    mapping: bool,
    /// Whether a sequence written at this mapping's own indentation (`key:` then `- a` at
    /// the key's column) is open inside it: a level without an indentation of its own.
    indentless: bool,
}

/// The state of [`yaml_too_deep`]'s scan: libyaml's position (line, column and index count
/// characters), flow level, indentation stack, block-level simple key and whether a simple
/// key may start here.
struct YamlScan<'a> {
    b: &'a [u8],
    i: usize,
    line: usize,
    column: usize,
    index: usize,
    /// The open flow collections: whether each is a sequence, and whether a single-pair
    /// mapping (`[a: b]`) is open in it.
    flows: Vec<(bool, bool)>,
    pairs: usize,
    indents: Vec<Indent>,
    indentless: usize,
    /// The possible simple key of the block level: (line, index, column) of its start.
    key: Option<(usize, usize, usize)>,
    allowed: bool,
    max: usize,
}

impl<'a> YamlScan<'a> {
    fn new(b: &'a [u8], max: usize) -> Self {
        Self {
            b,
            i: 0,
            line: 0,
            column: 0,
            index: 0,
            flows: Vec::new(),
            pairs: 0,
            indents: Vec::new(),
            indentless: 0,
            key: None,
            allowed: true,
            max,
        }
    }

    fn in_flow(&self) -> bool {
        !self.flows.is_empty()
    }

    fn at(&self, k: usize) -> u8 {
        self.b.get(self.i + k).copied().unwrap_or(0)
    }

    fn end(&self) -> bool {
        self.i >= self.b.len() || self.b[self.i] == 0
    }

    /// The length in bytes of a line break at `i + k`, or 0.
    fn break_len_at(&self, k: usize) -> usize {
        match (self.at(k), self.at(k + 1), self.at(k + 2)) {
            (b'\r', b'\n', _) => 2,
            (b'\r' | b'\n', _, _) => 1,
            (0xC2, 0x85, _) => 2,
            (0xE2, 0x80, 0xA8 | 0xA9) => 3,
            _ => 0,
        }
    }

    fn is_break(&self) -> bool {
        self.break_len_at(0) > 0
    }

    fn is_blank_at(&self, k: usize) -> bool {
        matches!(self.at(k), b' ' | b'\t')
    }

    fn is_blankz_at(&self, k: usize) -> bool {
        self.is_blank_at(k)
            || self.i + k >= self.b.len()
            || self.at(k) == 0
            || self.break_len_at(k) > 0
    }

    /// Moves over one character (a line break counts as one).
    fn skip(&mut self) {
        let n = self.break_len_at(0);
        if n > 0 {
            self.i += n;
            self.line += 1;
            self.column = 0;
            self.index += 1;
            return;
        }
        let lead = self.at(0);
        let len = match lead {
            0xF0..=0xFF => 4,
            0xE0..=0xEF => 3,
            0xC0..=0xDF => 2,
            _ => 1,
        };
        self.i = (self.i + len).min(self.b.len());
        self.column += 1;
        self.index += 1;
    }

    fn skip_to_break(&mut self) {
        while !self.end() && !self.is_break() {
            self.skip();
        }
    }

    fn indent(&self) -> isize {
        self.indents.last().map_or(-1, |i| i.column as isize)
    }

    fn depth(&self) -> usize {
        self.flows.len() + self.pairs + self.indents.len() + self.indentless
    }

    /// A key or value indicator inside a flow sequence opens a single-pair mapping.
    fn flow_pair(&mut self) {
        if let Some((true, pair @ false)) = self.flows.last_mut() {
            *pair = true;
            self.pairs += 1;
        }
    }

    /// An entry separator or the end of a collection closes its single-pair mapping.
    fn close_pair(&mut self) {
        if let Some((_, pair @ true)) = self.flows.last_mut() {
            *pair = false;
            self.pairs -= 1;
        }
    }

    fn too_deep(&self) -> bool {
        self.depth() > self.max
    }

    fn unroll(&mut self, column: isize) {
        if self.in_flow() {
            return;
        }
        while self.indent() > column {
            if let Some(top) = self.indents.pop()
                && top.indentless
            {
                self.indentless -= 1;
            }
        }
    }

    /// libyaml's `roll_indent`: a block collection at `column` deeper than the current one.
    fn roll(&mut self, column: usize, mapping: bool) {
        if !self.in_flow() && self.indent() < column as isize {
            self.indents.push(Indent {
                column,
                mapping,
                indentless: false,
            });
        }
    }

    fn save_key(&mut self) {
        if !self.in_flow() && self.allowed {
            self.key = Some((self.line, self.index, self.column));
        }
    }

    fn remove_key(&mut self) {
        if !self.in_flow() {
            self.key = None;
        }
    }

    /// libyaml's `scan_to_next_token`: blanks, comments and line breaks.
    fn skip_to_next_token(&mut self) {
        loop {
            if self.column == 0 && self.b[self.i..].starts_with(&[0xEF, 0xBB, 0xBF]) {
                self.i += 3;
            }
            while self.at(0) == b' ' || ((self.in_flow() || !self.allowed) && self.at(0) == b'\t') {
                self.skip();
            }
            if self.at(0) == b'#' {
                self.skip_to_break();
            }
            if !self.is_break() {
                return;
            }
            self.skip();
            if !self.in_flow() {
                self.allowed = true;
            }
        }
    }

    fn document_indicator(&self) -> bool {
        self.column == 0
            && (self.b[self.i..].starts_with(b"---") || self.b[self.i..].starts_with(b"..."))
            && self.is_blankz_at(3)
    }

    fn run(mut self) -> Option<usize> {
        loop {
            self.skip_to_next_token();
            self.unroll(self.column as isize);
            if self.end() {
                return None;
            }
            let c = self.at(0);
            if self.column == 0 && c == b'%' {
                self.unroll(-1);
                self.remove_key();
                self.allowed = false;
                self.skip_to_break();
                continue;
            }
            if self.document_indicator() {
                self.unroll(-1);
                self.remove_key();
                self.allowed = false;
                self.i += 3;
                self.column += 3;
                self.index += 3;
                continue;
            }
            // A token at the indentation of a mapping ends a sequence written at that
            // indentation, unless it is another entry of it.
            if !(self.in_flow() || c == b'-' && self.is_blankz_at(1))
                && self.indent() == self.column as isize
                && let Some(top) = self.indents.last_mut()
                && top.indentless
            {
                top.indentless = false;
                self.indentless -= 1;
            }
            match c {
                b'[' | b'{' => {
                    self.save_key();
                    self.flows.push((c == b'[', false));
                    if self.too_deep() {
                        return Some(self.line);
                    }
                    self.allowed = true;
                    self.skip();
                }
                b']' | b'}' => {
                    self.remove_key();
                    self.close_pair();
                    self.flows.pop();
                    self.allowed = false;
                    self.skip();
                }
                b',' => {
                    self.remove_key();
                    self.close_pair();
                    self.allowed = true;
                    self.skip();
                }
                b'-' if self.is_blankz_at(1) => {
                    if !self.in_flow() {
                        let column = self.column;
                        if self.indent() < column as isize {
                            self.roll(column, false);
                        } else if let Some(top) = self.indents.last_mut()
                            && top.column == column
                            && top.mapping
                            && !top.indentless
                        {
                            top.indentless = true;
                            self.indentless += 1;
                        }
                        if self.too_deep() {
                            return Some(self.line);
                        }
                    }
                    self.remove_key();
                    self.allowed = true;
                    self.skip();
                }
                b'?' if self.in_flow() || self.is_blankz_at(1) => {
                    self.roll(self.column, true);
                    self.flow_pair();
                    if self.too_deep() {
                        return Some(self.line);
                    }
                    self.remove_key();
                    self.allowed = !self.in_flow();
                    self.skip();
                }
                b':' if self.in_flow() || self.is_blankz_at(1) => {
                    if !self.in_flow() {
                        match self.key.take() {
                            Some((line, index, column))
                                if line == self.line && index + 1024 >= self.index =>
                            {
                                self.roll(column, true);
                                self.allowed = false;
                            }
                            _ => {
                                self.roll(self.column, true);
                                self.allowed = true;
                            }
                        }
                        if self.too_deep() {
                            return Some(self.line);
                        }
                    } else {
                        self.flow_pair();
                        if self.too_deep() {
                            return Some(self.line);
                        }
                        self.allowed = false;
                    }
                    self.skip();
                }
                b'*' | b'&' => {
                    self.save_key();
                    self.allowed = false;
                    self.skip();
                    while self.at(0).is_ascii_alphanumeric() || matches!(self.at(0), b'_' | b'-') {
                        self.skip();
                    }
                }
                b'!' => {
                    self.save_key();
                    self.allowed = false;
                    self.tag();
                }
                b'|' | b'>' if !self.in_flow() => {
                    self.remove_key();
                    self.allowed = true;
                    self.block_scalar();
                }
                b'\'' | b'"' => {
                    self.save_key();
                    self.allowed = false;
                    self.quoted(c == b'\'');
                }
                _ if self.plain_start() => {
                    self.save_key();
                    self.allowed = false;
                    self.plain();
                }
                // A character that cannot start a token: libyaml stops here.
                _ => self.skip(),
            }
        }
    }

    fn plain_start(&self) -> bool {
        let c = self.at(0);
        let indicator = self.is_blankz_at(0)
            || matches!(
                c,
                b'-' | b'?'
                    | b':'
                    | b','
                    | b'['
                    | b']'
                    | b'{'
                    | b'}'
                    | b'#'
                    | b'&'
                    | b'*'
                    | b'!'
                    | b'|'
                    | b'>'
                    | b'\''
                    | b'"'
                    | b'%'
                    | b'@'
                    | b'`'
            );
        !indicator
            || (c == b'-' && !self.is_blank_at(1))
            || (!self.in_flow() && matches!(c, b'?' | b':') && !self.is_blankz_at(1))
    }

    /// libyaml's `scan_tag`: a verbatim `!<uri>` (brackets and commas allowed) or a handle and
    /// suffix (without them).
    fn tag(&mut self) {
        let uri = |c: u8, brackets: bool| {
            c.is_ascii_alphanumeric()
                || b"-_;/?:@&=+$.%!~*'()".contains(&c)
                || (brackets && matches!(c, b',' | b'[' | b']'))
        };
        if self.at(1) == b'<' {
            self.skip();
            self.skip();
            while uri(self.at(0), true) {
                self.skip();
            }
            if self.at(0) == b'>' {
                self.skip();
            }
        } else {
            self.skip();
            while uri(self.at(0), false) {
                self.skip();
            }
        }
    }

    /// libyaml's `scan_flow_scalar`: a single- or double-quoted scalar, over lines.
    fn quoted(&mut self, single: bool) {
        self.skip();
        while !self.end() {
            let c = self.at(0);
            if single && c == b'\'' {
                if self.at(1) == b'\'' {
                    self.skip();
                    self.skip();
                    continue;
                }
                self.skip();
                return;
            }
            if !single && c == b'"' {
                self.skip();
                return;
            }
            if !single && c == b'\\' {
                self.skip();
            }
            self.skip();
        }
    }

    /// libyaml's `scan_plain_scalar`: over lines while they are indented deeper than the
    /// current block (in block context), up to `: `, ` #`, and (in flow context) `,[]{}`.
    fn plain(&mut self) {
        let indent = self.indent() + 1;
        let mut leading_blanks = false;
        loop {
            if self.document_indicator() || self.at(0) == b'#' {
                break;
            }
            while !self.is_blankz_at(0) {
                let c = self.at(0);
                if (c == b':' && self.is_blankz_at(1))
                    || (self.in_flow() && matches!(c, b',' | b'[' | b']' | b'{' | b'}'))
                {
                    break;
                }
                self.skip();
            }
            if !(self.is_blank_at(0) || self.is_break()) {
                break;
            }
            while self.is_blank_at(0) || self.is_break() {
                if self.is_break() {
                    leading_blanks = true;
                }
                self.skip();
            }
            if !self.in_flow() && (self.column as isize) < indent {
                break;
            }
        }
        if leading_blanks {
            self.allowed = true;
        }
    }

    /// libyaml's `scan_block_scalar`: the header, then every line indented at least as deep
    /// as the first (or as the explicit indentation indicator says).
    fn block_scalar(&mut self) {
        self.skip();
        let mut increment = 0usize;
        for _ in 0..2 {
            match self.at(0) {
                b'+' | b'-' => self.skip(),
                d @ b'1'..=b'9' => {
                    increment = (d - b'0') as usize;
                    self.skip();
                }
                _ => {}
            }
        }
        while self.is_blank_at(0) {
            self.skip();
        }
        if self.at(0) == b'#' {
            self.skip_to_break();
        }
        if !self.is_break() {
            // libyaml stops at anything else after the header (or the text ends here).
            return;
        }
        self.skip();
        let parent = self.indent();
        let mut indent = if increment > 0 {
            if parent >= 0 {
                parent as usize + increment
            } else {
                increment
            }
        } else {
            0
        };
        self.block_breaks(&mut indent, parent);
        while self.column == indent && !self.end() {
            self.skip_to_break();
            if self.end() {
                break;
            }
            self.skip();
            self.block_breaks(&mut indent, parent);
        }
    }

    /// libyaml's `scan_block_scalar_breaks`: leading spaces and empty lines; with `indent`
    /// 0 it is decided here from the deepest of them.
    fn block_breaks(&mut self, indent: &mut usize, parent: isize) {
        let mut max_indent = 0;
        loop {
            while (*indent == 0 || self.column < *indent) && self.at(0) == b' ' {
                self.skip();
            }
            max_indent = max_indent.max(self.column);
            if !self.is_break() {
                break;
            }
            self.skip();
        }
        if *indent == 0 {
            *indent = max_indent.max((parent + 1) as usize).max(1);
        }
    }
}

/// Converts YAML text to JSON, refusing documents with more than [`MAX_YAML_ALIASES`] aliases
/// (before expansion) or nesting deeper than [`MAX_DEPTH`]; the nesting is bounded before
/// the parser runs (see [`yaml_too_deep`]), so a deeply nested text costs one linear scan.
pub fn yaml_to_json(text: &[u8]) -> Result<Value, ApiError> {
    off_worker_when(text.len() > INLINE_YAML_BYTES, || parse_yaml(text))
}

/// The longest YAML body parsed without first handing the worker's other tasks to another
/// worker. Parsed on the workers, four creates of a 3 MB YAML list held `/readyz` up for 1.3 s.
const INLINE_YAML_BYTES: usize = 64 * 1024;

/// Runs `f`; when `heavy` and on the multi-thread runtime, the worker's other tasks move to
/// another worker while it runs (`tokio::task::block_in_place`), so a long decode does not
/// hold up other requests and health checks.
fn off_worker_when<T>(heavy: bool, f: impl FnOnce() -> T) -> T {
    let multi_thread = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if heavy && multi_thread {
        tokio::task::block_in_place(f)
    } else {
        f()
    }
}

fn parse_yaml(text: &[u8]) -> Result<Value, ApiError> {
    let s = std::str::from_utf8(text)
        .map_err(|e| ApiError::bad_request(format!("error converting YAML to JSON: {e}")))?;
    if let Some(line) = yaml_too_deep(s, MAX_DEPTH) {
        return Err(ApiError::bad_request(yaml_depth_message(line)));
    }
    let aliases = s
        .split(|c: char| c.is_whitespace() || c == '[' || c == ',' || c == '{')
        .filter(|w| w.starts_with('*') && w.len() > 1)
        .count();
    if aliases > MAX_YAML_ALIASES {
        return Err(ApiError::bad_request(
            "error converting YAML to JSON: yaml: document contains excessive aliasing",
        ));
    }
    let v: Value = serde_yaml_ng::from_str(s)
        .map_err(|e| ApiError::bad_request(format!("error converting YAML to JSON: {e}")))?;
    // Aliases can nest deeper than the text does.
    if depth(&v) > MAX_DEPTH {
        return Err(ApiError::bad_request(yaml_depth_message(0)));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nest(open: &str, leaf: &str, close: &str, n: usize) -> String {
        format!("{}{leaf}{}", open.repeat(n), close.repeat(n))
    }

    #[test]
    fn yaml_decodes_and_bounds_aliases() {
        assert_eq!(
            yaml_to_json(b"a: 1\nb: [x]\n").unwrap(),
            serde_json::json!({"a": 1, "b": ["x"]})
        );
        let mut bomb = String::from("a: &a [x]\n");
        for i in 0..200 {
            bomb.push_str(&format!("k{i}: [*a, *a]\n"));
        }
        assert_eq!(yaml_to_json(bomb.as_bytes()).unwrap_err().code(), 400);
    }

    #[test]
    fn yaml_depth_bound_is_checked_before_parsing() {
        // 100,000 levels are refused at once, with go-yaml's message.
        for deep in [
            nest("[", "", "]", 100_000),
            format!("a: {}", nest("{a: ", "1", "}", 100_000)),
            "- ".repeat(100_000),
        ] {
            let err = yaml_to_json(deep.as_bytes()).unwrap_err();
            assert_eq!(err.code(), 400);
            assert_eq!(err.message(), "yaml: exceeded max depth of 100");
        }
        let err = yaml_to_json(format!("a: 1\nb:\n  {}", nest("[", "", "]", 150)).as_bytes())
            .unwrap_err();
        assert_eq!(err.message(), "yaml: line 3: exceeded max depth of 100");
        // The limit itself is accepted.
        let ok = nest("[", "1", "]", MAX_DEPTH);
        assert_eq!(depth(&yaml_to_json(ok.as_bytes()).unwrap()), MAX_DEPTH);
        let ok = format!("{}1", "- ".repeat(MAX_DEPTH));
        assert_eq!(depth(&yaml_to_json(ok.as_bytes()).unwrap()), MAX_DEPTH);
    }

    #[test]
    fn yaml_brackets_in_scalars_and_comments_do_not_count() {
        let open = "[".repeat(300);
        let close = "]".repeat(300);
        let docs = [
            format!("a: \"{open}\"\nb: '{open}'\n"),
            format!("a: x{open}\n"),
            format!("a: |\n  {open}\n  {open}\nb: 1\n"),
            format!("a: >-\n    {open}\n\n    {open}\nb: [1]\n"),
            format!("# {open}\na: 1 # {open}\n"),
            format!("a: plain\n  continued {open}\n"),
            format!("- |2\n   {open}\n- 1\n"),
            format!("a: \"multi\n  line {open}\\\" still\"\n"),
            format!("a: 'it''s {open}'\n"),
            format!("k: !<tag:{open}> x\n"),
            format!("a: x{close}\n"),
            format!("- x{close}\n- y{close}\n"),
        ];
        for doc in docs {
            assert_eq!(yaml_too_deep(&doc, MAX_DEPTH), None, "{doc}");
            assert!(yaml_to_json(doc.as_bytes()).is_ok(), "{doc}");
        }
    }

    #[test]
    fn yaml_closers_in_scalars_do_not_hide_nesting() {
        let docs = [
            nest("[\"]\", ", "1", "]", 200),
            nest("['}', ", "1", "]", 200),
            nest("{a: \"}\", b: ", "1", "}", 200),
            format!("a: |\n  ]]]]\nb: {}", nest("[", "1", "]", 200)),
            format!("a: \"x\n  ]]]]\"\nb: {}", nest("[", "1", "]", 200)),
            nest("- ", "1", "", 200),
            (0..60)
                .map(|i| format!("{}- a:\n", "  ".repeat(i)))
                .collect(),
            (0..120).map(|i| format!("{}a:\n", " ".repeat(i))).collect(),
        ];
        for doc in docs {
            assert!(yaml_too_deep(&doc, MAX_DEPTH).is_some(), "{doc}");
        }
    }

    fn yaml_depth(v: &serde_yaml_ng::Value) -> usize {
        use serde_yaml_ng::Value as Y;
        match v {
            Y::Sequence(s) => 1 + s.iter().map(yaml_depth).max().unwrap_or(0),
            Y::Mapping(m) => {
                1 + m
                    .iter()
                    .map(|(k, v)| yaml_depth(k).max(yaml_depth(v)))
                    .max()
                    .unwrap_or(0)
            }
            Y::Tagged(t) => yaml_depth(&t.value),
            _ => 0,
        }
    }

    /// Random documents from YAML fragments: whenever the parser accepts one, the scan's bound
    /// is at least the parsed depth (it never lets deeper nesting through) and at most the
    /// depth of the YAML (it refuses nothing within the limit).
    #[test]
    fn yaml_scan_agrees_with_the_parser_on_random_documents() {
        use rand::{Rng, SeedableRng};
        const FRAGMENTS: &[&str] = &[
            "[",
            "]",
            "{",
            "}",
            ", ",
            ": ",
            "a",
            "b1",
            "- ",
            "? ",
            "\n",
            "\n  ",
            "\n    ",
            "  ",
            "\"]\"",
            "\"[\"",
            "'}'",
            "'{'",
            "'it''s'",
            "\"a\\\"]\"",
            "# ]\n",
            " # [\n",
            "|\n  ]\n",
            ">\n  [\n",
            "|-\n    ]]\n",
            "&x ",
            "!t ",
            "!<a[]> ",
            "x]y",
            "x[y",
            "a:b",
            ":a",
            "-a",
            "?a",
            "\"\n]\"",
            "'\n]'",
            "---\n",
            "\t",
            "\n- ",
            "\n  - ",
            "\n  a: ",
            "\n    b: ",
            "k: ",
            "|2\n   [\n",
            ">+\n\n  ]\n",
            "\\",
            "\"\\\n]\"",
            "...\n",
        ];
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut parsed = 0;
        for _ in 0..40_000 {
            let n = rng.random_range(1..24);
            let doc: String = (0..n)
                .map(|_| FRAGMENTS[rng.random_range(0..FRAGMENTS.len())])
                .collect();
            let Ok(v) = serde_yaml_ng::from_str::<Value>(&doc) else {
                continue;
            };
            parsed += 1;
            let d = depth(&v);
            for max in 0..d {
                assert!(
                    yaml_too_deep(&doc, max).is_some(),
                    "{doc:?}: depth {d} passes {max}"
                );
            }
            // The depth of the YAML itself (a JSON value loses repeated keys, YAML's mapping
            // refuses them).
            if let Ok(y) = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(&doc) {
                let d = yaml_depth(&y);
                assert_eq!(yaml_too_deep(&doc, d), None, "{doc:?}: depth {d} refused");
            }
        }
        assert!(parsed > 2_000, "only {parsed} documents parsed");
    }
}
#[cfg(test)]
mod alias_bombs {
    /// Few aliases, nested: 81 aliases that would expand to 9^9 nodes.
    #[test]
    fn nested_alias_bomb_is_refused_quickly() {
        let mut doc = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x]\n");
        for i in 1..9 {
            let p = i - 1;
            doc.push_str(&format!(
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
            ));
        }
        let err = super::yaml_to_json(doc.as_bytes()).unwrap_err();
        assert_eq!(err.code(), 400);
    }
}
