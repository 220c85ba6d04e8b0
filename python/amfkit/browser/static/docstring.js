// Docstrings as elements (docs/browser.md, "Docstrings"): the reStructuredText and
// Markdown markup Python docstrings commonly hold, made into elements with createElement,
// every piece of the docstring's own text a text node. Links lead only to http and https
// URLs. The gateway sends docstrings already cleaned (inspect.getdoc: tabs expanded, the
// common indentation removed), so indentation here is the docstring's own.
//
// Blocks: paragraphs (split at blank lines) -> <p>; a title underlined with = - ~ ^ and
// the like -> <h4>; indented text (after `::`, an example) -> <pre>; `>>>` doctest lines
// -> <pre>; ``` or ~~~ fences -> <pre>; "- ", "* ", "+ " items -> <ul>; `:param x:` fields
// -> <dl>. Inline: ``literal`` -> <code>; `interpreted` and :role:`target` -> <code>;
// *emphasis* -> <em>; **strong** -> <strong>; `text <url>`_, [text](url) and bare URLs ->
// <a>. Markup follows reStructuredText's recognition rules (an opener follows a space or
// an opening bracket and precedes text, a closer the reverse), so `*args` and `2 * 3`
// stay as written. Backslashes are text: a docstring's "\n" shows as written.

import { el } from "./dom.js";

/** Characters of a docstring rendered; the rest is left out, with a note. */
export const MAX_DOC = 100_000;
/** Lists and fields nested deeper than this show their text as written. */
const MAX_DEPTH = 8;

const BULLET = /^([-*+])( +)(?=\S)/;
const FIELD = /^:([^:\s][^:]*):(?=\s|$)/;
const FENCE = /^(`{3,}|~{3,})/;
const UNDERLINE = /^([=\-~^"'`#*+:.])\1{2,}\s*$/;
const ROLE = /:([A-Za-z][\w+.-]*(?::[\w+.-]+)?):`/y;
const MD_LINK = /\[([^[\]\n]{1,500})\]\(([^()\s]{1,2000})\)/y;
const BARE_URL = /https?:\/\/[^\s<>"'`]+/iy;
/** Where inline markup may start: the next character worth a look. */
const INTERESTING = /[`*:[hH]/g;
/** What may come before an opener, and after a closer (besides the text's ends). */
const OPEN_AFTER = /[\s\p{Ps}\p{Pi}\p{Pf}\p{Pd}'"<\/:]/u;
const CLOSE_BEFORE = /[\s\p{Pe}\p{Pi}\p{Pf}\p{Pd}'">\/:.,;!?\\]/u;

/** The elements of a docstring, to append to a container. */
export function renderDoc(doc) {
  let text = String(doc).replace(/\r\n?/g, "\n");
  let cut = 0;
  if (text.length > MAX_DOC) {
    cut = text.length - MAX_DOC;
    text = text.slice(0, MAX_DOC);
  }
  const out = blocks(text.split("\n"), 0);
  if (cut > 0) out.push(el("p", { class: "muted" }, `(the docstring goes on: ${cut.toLocaleString("en")} more characters not shown)`));
  return out;
}

/** The first paragraph of a docstring as plain text, its markup taken away (for titles). */
export function docSummary(doc) {
  const first = String(doc).replace(/\r\n?/g, "\n").slice(0, 2000).split(/\n\s*\n/)[0].trim();
  return inline(first)
    .map((n) => (typeof n === "string" ? n : n.textContent))
    .join("")
    .replace(/\s+/g, " ");
}

// --- blocks -------------------------------------------------------------------------------

function isBlank(line) {
  return line.trim() === "";
}

function indentOf(line) {
  return line.length - line.trimStart().length;
}

/** A line at the margin that begins a block of its own rather than continuing a paragraph. */
function startsBlock(line) {
  return line.startsWith(">>>") || FENCE.test(line) || BULLET.test(line) || FIELD.test(line);
}

/** Where the indented lines from `j` end (blank lines between them included, not after). */
function indentedEnd(lines, j) {
  let end = j;
  for (let k = j; k < lines.length; k++) {
    if (isBlank(lines[k])) continue;
    if (indentOf(lines[k]) === 0) break;
    end = k + 1;
  }
  return end;
}

/** The lines less their common indentation. */
function dedent(lines) {
  const margin = lines.reduce((least, l) => (isBlank(l) ? least : Math.min(least, indentOf(l))), Infinity);
  return Number.isFinite(margin) ? lines.map((l) => l.slice(Math.min(margin, indentOf(l)))) : lines;
}

function pre(lines, kind) {
  return el("pre", { class: `doc-${kind}` }, dedent(lines).join("\n").trimEnd());
}

/** A list item or a field's description: its lines as blocks, a lone paragraph unwrapped. */
function body(tag, lines, depth) {
  const node = el(tag, {});
  if (depth >= MAX_DEPTH) {
    node.append(lines.join("\n"));
    return node;
  }
  const inner = blocks(lines, depth + 1);
  if (inner.length === 1 && inner[0].tagName === "P") node.append(...inner[0].childNodes);
  else node.append(...inner);
  return node;
}

/** Where the next block after `j` starts (blank lines skipped), or -1. */
function nextText(lines, j) {
  while (j < lines.length && isBlank(lines[j])) j++;
  return j < lines.length ? j : -1;
}

function blocks(lines, depth) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (isBlank(line)) {
      i++;
    } else if (indentOf(line) > 0) {
      const end = indentedEnd(lines, i);
      out.push(pre(lines.slice(i, end), "literal"));
      i = end;
    } else if (line.startsWith(">>>")) {
      let end = i;
      while (end < lines.length && !isBlank(lines[end])) end++;
      out.push(pre(lines.slice(i, end), "doctest"));
      i = end;
    } else if (FENCE.test(line)) {
      const fence = FENCE.exec(line)[1];
      let end = i + 1;
      while (end < lines.length && !(lines[end].trim().startsWith(fence) && /^(`+|~+)$/.test(lines[end].trim()))) end++;
      out.push(pre(lines.slice(i + 1, end), "literal"));
      i = end + 1;
    } else if (BULLET.test(line)) {
      i = bulletList(lines, i, depth, out);
    } else if (FIELD.test(line)) {
      i = fieldList(lines, i, depth, out);
    } else if (i + 1 < lines.length && UNDERLINE.test(lines[i + 1]) && !UNDERLINE.test(line)) {
      out.push(el("h4", { class: "doc-title" }, ...inline(line.trim())));
      i += 2;
    } else {
      i = paragraph(lines, i, out);
    }
  }
  return out;
}

function paragraph(lines, i, out) {
  let end = i + 1;
  while (end < lines.length && !isBlank(lines[end]) && indentOf(lines[end]) === 0 && !startsBlock(lines[end])) end++;
  let text = lines.slice(i, end).join("\n").trimEnd();
  // "Example::" before an indented block is "Example:", "Example ::" is "Example", and a
  // lone "::" is nothing: the block that follows is shown as written either way.
  const literal = /(\s?)::$/.exec(text);
  if (literal && indentedEnd(lines, end) > end) {
    text = text.slice(0, literal.index) + (literal[1] || literal.index === 0 ? "" : ":");
  }
  if (text.trim() !== "") out.push(el("p", {}, ...inline(text)));
  return end;
}

function bulletList(lines, i, depth, out) {
  const marker = lines[i][0];
  const list = el("ul", {});
  for (;;) {
    const width = BULLET.exec(lines[i])[0].length;
    const item = [lines[i].slice(width)];
    let j = i + 1;
    for (;;) {
      const end = indentedEnd(lines, j);
      if (end > j) {
        for (const l of lines.slice(j, end)) item.push(l.slice(Math.min(width, indentOf(l))));
        j = end;
      } else if (j < lines.length && !isBlank(lines[j]) && !startsBlock(lines[j]) && !UNDERLINE.test(lines[j])) {
        item.push(lines[j]); // a line carrying on the item's text without indentation
        j++;
      } else {
        break;
      }
    }
    list.append(body("li", item, depth));
    const next = nextText(lines, j);
    if (next < 0 || lines[next][0] !== marker || !BULLET.test(lines[next])) {
      out.push(list);
      return j;
    }
    i = next;
  }
}

function fieldList(lines, i, depth, out) {
  const list = el("dl", { class: "doc-fields" });
  for (;;) {
    const m = FIELD.exec(lines[i]);
    const end = indentedEnd(lines, i + 1);
    const text = [lines[i].slice(m[0].length).trim(), ...dedent(lines.slice(i + 1, end))];
    list.append(el("dt", {}, m[1].trim()), body("dd", text, depth));
    const next = nextText(lines, end);
    if (next < 0 || !FIELD.test(lines[next])) {
      out.push(list);
      return end;
    }
    i = next;
  }
}

// --- inline markup ------------------------------------------------------------------------

/** Can markup `len` characters long open at `i`: after a space or an opening bracket
 * (or at the start), and before text? */
function opens(text, i, len) {
  return (i === 0 || OPEN_AFTER.test(text[i - 1])) && i + len < text.length && !/\s/.test(text[i + len]);
}

/** Can markup close at `end` (its last character before `after`): after text, and
 * before a space, a closing bracket or punctuation (or at the end)? */
function closes(text, end, after) {
  return !/\s/.test(text[end - 1]) && (after >= text.length || CLOSE_BEFORE.test(text[after]));
}

/** An http or https URL as an href, or null for anything else (relative, other schemes). */
export function safeHref(raw) {
  const text = raw.trim();
  if (!/^https?:\/\//i.test(text)) return null;
  try {
    const url = new URL(text);
    return url.protocol === "http:" || url.protocol === "https:" ? url.href : null;
  } catch {
    return null;
  }
}

function link(href, text) {
  return el("a", { href, class: "doc-link", rel: "noopener noreferrer", target: "_blank" }, text);
}

/** What a role's target shows: "Title <target>" its title, "~a.b.c" its last part. */
function roleText(target) {
  const titled = /^([\s\S]*?\S)\s*<[^<>]+>$/.exec(target);
  if (titled) return titled[1];
  const bare = target.replace(/^!/, "");
  return bare.startsWith("~") ? bare.slice(bare.lastIndexOf(".") + 1).replace(/^~/, "") : bare;
}

/** A paragraph's text as strings (text) and elements: [string | Element]. */
export function inline(text) {
  const out = [];
  let plain = "";
  const put = (node) => {
    if (plain) out.push(plain);
    plain = "";
    out.push(node);
  };
  // Each search for a closer starts after the last; a delimiter once missing stays missing.
  const missing = new Set();
  const find = (delim, from) => {
    if (missing.has(delim)) return -1;
    const at = text.indexOf(delim, from);
    if (at < 0) missing.add(delim);
    return at;
  };
  let i = 0;
  while (i < text.length) {
    INTERESTING.lastIndex = i;
    const hit = INTERESTING.exec(text);
    const at = hit ? hit.index : text.length;
    plain += text.slice(i, at);
    i = at;
    if (i >= text.length) break;
    const ch = text[i];
    let m;
    if (ch === "`" && text.startsWith("``", i)) {
      const end = opens(text, i, 2) ? find("``", i + 2) : -1;
      if (end > i + 2 && closes(text, end, end + 2)) {
        put(el("code", {}, text.slice(i + 2, end)));
        i = end + 2;
      } else {
        plain += "``";
        i += 2;
      }
    } else if (ch === "`") {
      const end = opens(text, i, 1) ? find("`", i + 1) : -1;
      const ref = end < 0 ? 0 : text.startsWith("__", end + 1) ? 2 : text[end + 1] === "_" ? 1 : 0;
      if (end > i + 1 && closes(text, end, end + 1 + ref)) {
        const inner = text.slice(i + 1, end);
        const source = text.slice(i, end + 1 + ref);
        i = end + 1 + ref;
        if (ref === 0) {
          put(el("code", {}, inner));
        } else {
          const target = /^([\s\S]*?)\s*<([^<>]+)>$/.exec(inner);
          if (!target) {
            plain += inner; // a reference to a target named elsewhere: its text
          } else {
            const href = safeHref(target[2]);
            if (href) put(link(href, target[1] || target[2]));
            else plain += source; // not an http(s) link: the markup as written
          }
        }
      } else {
        plain += "`";
        i += 1;
      }
    } else if (ch === "*" && text.startsWith("**", i)) {
      const end = opens(text, i, 2) ? find("**", i + 2) : -1;
      if (end > i + 2 && closes(text, end, end + 2)) {
        put(el("strong", {}, text.slice(i + 2, end)));
        i = end + 2;
      } else {
        plain += "**";
        i += 2;
      }
    } else if (ch === "*") {
      const end = opens(text, i, 1) ? find("*", i + 1) : -1;
      if (end > i + 1 && closes(text, end, end + 1)) {
        put(el("em", {}, text.slice(i + 1, end)));
        i = end + 1;
      } else {
        plain += "*";
        i += 1;
      }
    } else if (ch === ":" && (i === 0 || OPEN_AFTER.test(text[i - 1])) && ((ROLE.lastIndex = i), (m = ROLE.exec(text)))) {
      const start = i + m[0].length;
      const end = find("`", start);
      if (end > start && closes(text, end, end + 1)) {
        put(el("code", {}, roleText(text.slice(start, end))));
        i = end + 1;
      } else {
        plain += m[0];
        i = start;
      }
    } else if (ch === "[" && ((MD_LINK.lastIndex = i), (m = MD_LINK.exec(text)))) {
      const href = safeHref(m[2]);
      if (href) put(link(href, m[1]));
      else plain += m[0];
      i += m[0].length;
    } else if ((ch === "h" || ch === "H") && (i === 0 || !/[\w/.:@-]/.test(text[i - 1])) && ((BARE_URL.lastIndex = i), (m = BARE_URL.exec(text)))) {
      let url = m[0];
      // Punctuation after a URL ends the sentence, not the URL; so does an unmatched ")".
      for (;;) {
        const last = url[url.length - 1];
        if (".,;:!?".includes(last)) url = url.slice(0, -1);
        else if (last === ")" && url.split("(").length < url.split(")").length) url = url.slice(0, -1);
        else break;
      }
      const href = safeHref(url);
      if (href && url.length > url.indexOf("//") + 2) put(link(href, url));
      else plain += url;
      i += url.length;
    } else {
      plain += ch;
      i += 1;
    }
  }
  if (plain) out.push(plain);
  return out;
}
