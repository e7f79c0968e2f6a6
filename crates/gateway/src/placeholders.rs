//! Counting a statement's bind placeholders in each SQL dialect, so a line
//! whose params do not match is refused before any round trip.
//!
//! The scan skips what can hold a placeholder-looking character without
//! being one: string literals, quoted identifiers, comments, and in
//! PostgreSQL dollar-quoted bodies and `E'...'` escape strings.
//!
//! | dialect | placeholder | count |
//! |---|---|---|
//! | PostgreSQL | `$n` (not inside an identifier such as `a$1`) | the highest `n` |
//! | MariaDB/MySQL | `?` | how many |

/// A SQL dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// PostgreSQL: `$1`, `$2`, ...
    Postgres,
    /// MariaDB/MySQL: `?`.
    Mysql,
}

/// Bytes that may continue an identifier (or a number), one lookup each:
/// the scan asks this of most bytes of a statement.
const IDENT: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80;
        b += 1;
    }
    table
};

fn ident_char(b: u8) -> bool {
    IDENT[b as usize]
}

/// The end (exclusive) of a quoted run starting after the opening `quote`
/// at `i`; doubled quotes stay inside, and with `backslash` so does `\x`.
/// An unterminated run ends at the end of the text.
fn skip_quoted(s: &[u8], mut i: usize, quote: u8, backslash: bool) -> usize {
    while i < s.len() {
        let b = s[i];
        if backslash && b == b'\\' {
            i += 2;
        } else if b == quote {
            if s.get(i + 1) == Some(&quote) {
                i += 2;
            } else {
                return i + 1;
            }
        } else {
            i += 1;
        }
    }
    s.len()
}

fn skip_line(s: &[u8], i: usize) -> usize {
    s[i..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(s.len(), |p| i + p + 1)
}

/// The end of a `/* */` comment whose body starts at `i`.
fn skip_block(s: &[u8], mut i: usize, nested: bool) -> usize {
    let mut depth = 1usize;
    while i < s.len() {
        if s[i] == b'*' && s.get(i + 1) == Some(&b'/') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else if nested && s[i] == b'/' && s.get(i + 1) == Some(&b'*') {
            depth += 1;
            i += 2;
        } else {
            i += 1;
        }
    }
    s.len()
}

/// At `$` (index `i`, not inside an identifier): the end of a dollar-quoted
/// body when one starts here (`$$` or `$tag$`), else `None`.
fn skip_dollar_quoted(s: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    if let Some(&b) = s.get(j)
        && (b.is_ascii_alphabetic() || b == b'_' || b >= 0x80)
    {
        while s.get(j).is_some_and(|&b| ident_char(b) && b != b'$') {
            j += 1;
        }
    }
    if s.get(j) != Some(&b'$') {
        return None;
    }
    let tag = &s[i..=j];
    let body = j + 1;
    Some(
        s[body..]
            .windows(tag.len())
            .position(|w| w == tag)
            .map_or(s.len(), |p| body + p + tag.len()),
    )
}

/// How many params a statement in `dialect` takes (see the module table).
pub fn count_placeholders(sql: &str, dialect: Dialect) -> usize {
    let s = sql.as_bytes();
    let mut i = 0;
    let mut count = 0usize;
    while i < s.len() {
        let b = s[i];
        match b {
            b'\'' => {
                let escape = dialect == Dialect::Mysql
                    || (i > 0
                        && matches!(s[i - 1], b'e' | b'E')
                        && !(i > 1 && ident_char(s[i - 2])));
                i = skip_quoted(s, i + 1, b'\'', escape);
            }
            b'"' => i = skip_quoted(s, i + 1, b'"', dialect == Dialect::Mysql),
            b'`' if dialect == Dialect::Mysql => i = skip_quoted(s, i + 1, b'`', false),
            b'-' if s.get(i + 1) == Some(&b'-') => {
                let mysql_needs_space = dialect == Dialect::Mysql
                    && s.get(i + 2).is_some_and(|c| !c.is_ascii_whitespace());
                if mysql_needs_space {
                    i += 2;
                } else {
                    i = skip_line(s, i);
                }
            }
            b'#' if dialect == Dialect::Mysql => i = skip_line(s, i),
            b'/' if s.get(i + 1) == Some(&b'*') => {
                i = skip_block(s, i + 2, dialect == Dialect::Postgres);
            }
            b'?' if dialect == Dialect::Mysql => {
                count += 1;
                i += 1;
            }
            b'$' if dialect == Dialect::Postgres && !(i > 0 && ident_char(s[i - 1])) => {
                let digits = s[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
                if digits > 0 {
                    let n = sql[i + 1..i + 1 + digits]
                        .parse::<usize>()
                        .unwrap_or(usize::MAX);
                    count = count.max(n);
                    i += 1 + digits;
                } else if let Some(end) = skip_dollar_quoted(s, i) {
                    i = end;
                } else {
                    i += 1;
                }
            }
            _ if ident_char(b) => {
                // A whole identifier or number: `a$1` is not a placeholder.
                i += s[i..]
                    .iter()
                    .position(|&c| !ident_char(c))
                    .unwrap_or(s.len() - i);
            }
            _ => i += 1,
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::{Dialect, count_placeholders};
    use proptest::prelude::*;

    #[test]
    fn postgres_counts_the_highest_dollar_number_outside_literals() {
        let pg = |s| count_placeholders(s, Dialect::Postgres);
        assert_eq!(pg("SELECT * FROM t WHERE id = $1"), 1);
        assert_eq!(pg("UPDATE t SET a = $2 WHERE id = $1 OR id = $1"), 2);
        assert_eq!(pg("SELECT '$1', \"$2\", $3"), 3);
        assert_eq!(pg("SELECT E'it\\'s $4', $1"), 1);
        assert_eq!(pg("SELECT $$ $7 $$, $tag$ $9 $tag$, $2"), 2);
        assert_eq!(pg("SELECT a$1 FROM t -- $5\n WHERE x = $1"), 1);
        assert_eq!(pg("SELECT /* $3 /* $4 */ $5 */ $1"), 1);
        assert_eq!(pg("SELECT 1"), 0);
        assert_eq!(pg("SELECT 'unterminated $1"), 0);
    }

    #[test]
    fn mysql_counts_question_marks_outside_literals() {
        let my = |s| count_placeholders(s, Dialect::Mysql);
        assert_eq!(my("SELECT * FROM t WHERE id = ?"), 1);
        assert_eq!(my("UPDATE t SET a = ? WHERE id = ?"), 2);
        assert_eq!(my("SELECT '?', \"?\", `?`, 'it\\'s ?', ?"), 1);
        assert_eq!(my("SELECT ? # ?\n, ? -- ?\n, ?--?"), 4);
        assert_eq!(my("SELECT /* ? */ ?"), 1);
        assert_eq!(my("SELECT $1"), 0);
    }

    proptest! {
        /// Placeholders joined with literal and comment noise around them
        /// are counted exactly, and the scan never panics.
        #[test]
        fn generated_statements_are_counted(
            n in 0usize..12,
            noise in proptest::collection::vec(0usize..5, 12),
        ) {
            let pieces = ["'x?$9'", "/* ?$8 */", "\"q?$7\"", "-- ?$6\n", "ab"];
            let mut pg = String::from("SELECT ");
            let mut my = String::from("SELECT ");
            for i in 0..n {
                pg.push_str(&format!("{} ${} ", pieces[noise[i]], i + 1));
                my.push_str(&format!("{} ? ", pieces[noise[i]]));
            }
            prop_assert_eq!(count_placeholders(&pg, Dialect::Postgres), n);
            prop_assert_eq!(count_placeholders(&my, Dialect::Mysql), n);
        }

        #[test]
        fn arbitrary_text_never_panics(s in "\\PC{0,64}") {
            let _ = count_placeholders(&s, Dialect::Postgres);
            let _ = count_placeholders(&s, Dialect::Mysql);
        }
    }
}
