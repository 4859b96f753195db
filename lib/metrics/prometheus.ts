/**
 * Parser for the Prometheus text exposition format 0.0.4, the body of a model server's GET /metrics.
 *
 * Why our own parser instead of the npm package parse-prometheus-text-format (kept as a
 * devDependency only, for bench/parse.ts):
 * - Speed, measured with bench/parse.ts (`npx tsx bench/parse.ts`, Node 20.20, the 2-core dev machine,
 *   shared with other jobs, three runs): on a realistic 8-engine data-parallel vLLM V1 body (277 KB,
 *   2,863 samples) this parser takes 2.2-2.6 ms (median of 50 runs) and the package 6.2-6.6 ms, about
 *   2.6-2.9x faster. The watcher parses every backend's body on every tick. A 50 MB junk body takes
 *   0.15-0.2 s and every line becomes an error; single 50 MB lines of junk (one endless name, an
 *   unterminated quoted value, 25 M backslashes, 50 M "{") take 0.1-0.4 s each.
 * - Errors per line, never a throw, never junk accepted. The package (1.1.1, tried) throws on the
 *   first malformed label set, so one odd line loses every reading in the body; and it does not
 *   validate names or values, so an HTML page parses "successfully" into metrics named "<html>" with
 *   values such as "Found</body>" (it returns values as strings). Here each bad line is an error with
 *   its line number, and values are numbers or the line is rejected.
 * - It keeps `_created`, `_count` and every label set as separate flat samples; the package groups
 *   samples into prom2json-style families, which is the wrong shape for summing across engines.
 * - One pass over character codes, no regular expressions, so no backtracking hazard: linear time on
 *   any input (it is meant to be fuzzed with junk), and no dependency to audit for that.
 *
 * Accepted grammar (one line at a time; lines end at "\n", a "\r" before it is dropped):
 *   blank line                      ignored (spaces and tabs only)
 *   "#" comment                     ignored, except "# HELP name text" and "# TYPE name type"
 *   name [ "{" labels "}" ] value [ timestamp ]
 * with blanks (space or tab) allowed between all tokens, a trailing comma allowed in the label set,
 * label values in double quotes with the escapes \\ \" \n (an unknown escape such as \t is kept
 * verbatim, as Prometheus' own parser does), values as decimal floats (exponents of any length),
 * NaN, +Inf, -Inf (also Inf/Infinity, any case, as Go's ParseFloat accepts), and an optional integer
 * timestamp in milliseconds. Hex floats and anything after the timestamp are errors.
 */

export interface Sample {
  /** The sample's own name, e.g. `vllm:iteration_tokens_total_count` (not the family name). */
  name: string;
  labels: Record<string, string>;
  value: number;
  timestampMs?: number;
}

export interface ParseError {
  /** 1-based line number. */
  line: number;
  message: string;
  /** The start of the offending line (at most ERROR_TEXT_CHARS characters). */
  text: string;
}

export interface ParseResult {
  samples: Sample[];
  /** `# TYPE` per family name (the first TYPE line for a name wins). */
  types: Map<string, string>;
  /** `# HELP` per family name, unescaped, verbatim otherwise (trailing spaces kept). */
  help: Map<string, string>;
  /** The first `maxErrors` malformed lines (a 50 MB junk body must not become 10 M error objects). */
  errors: ParseError[];
  /** Every malformed line, including the ones not kept in `errors`. */
  errorCount: number;
  /** Sample lines left out by the `families` option (only their shape was checked, see there). */
  skippedLines: number;
}

export interface ParseOptions {
  /** How many errors to keep in `errors` (all are counted in `errorCount`). Default 100. */
  maxErrors?: number;
  /**
   * Parse only these families: a sample line is kept when its name is one of them, or one of them
   * plus a family suffix (_total, _count, _sum, _bucket, _created, _info), so a single series
   * name ("x_count") keeps just that series. Any other line is skipped on its name, before its
   * labels are read, and its HELP/TYPE are not kept: an adapter that reads a dozen series of a
   * ~35 KB body with hundreds of histogram buckets need not parse them. Skipped lines are counted
   * (`skippedLines`); only their shape is checked (name, braces, a number), so a junk line is
   * still an error, while a bad label inside a skipped family goes unnoticed. Pass the same Set
   * each time: it is compiled once.
   */
  families?: Iterable<string>;
  /**
   * The same target's previous bodies (see LineCache): a line that starts as the line at the same
   * place did last time is read from what that line was, only its value parsed. One per target.
   */
  cache?: LineCache;
}

/** Suffixes a sample's name may carry after its family's name (OpenMetrics and prometheus_client). */
const FAMILY_SUFFIXES = ["_total", "_count", "_sum", "_bucket", "_created", "_info"];

/** Whether the sample name `name` belongs to one of `families` (see ParseOptions.families). */
function inFamilies(name: string, families: ReadonlySet<string>): boolean {
  if (families.has(name)) return true;
  const cut = name.lastIndexOf("_");
  if (cut <= 0) return false;
  const suffix = name.slice(cut);
  return FAMILY_SUFFIXES.includes(suffix) && families.has(name.slice(0, cut));
}

const ERROR_TEXT_CHARS = 80;
const DEFAULT_MAX_ERRORS = 100;

// Character codes used by the scanner.
const TAB = 9;
const CR = 13;
const SPACE = 32;
const QUOTE = 34;
const HASH = 35;
const PLUS = 43;
const COMMA = 44;
const MINUS = 45;
const DOT = 46;
const EQUALS = 61;
const BACKSLASH = 92;
const OPEN_BRACE = 123;
const CLOSE_BRACE = 125;
const LOWER_E = 101;
const LOWER_N = 110;

/**
 * A copy of `s` that does not keep the body it was cut from alive. V8 represents a slice of 13 or
 * more characters as a view into its parent string, so one model name kept from a /metrics body
 * keeps the whole body (~35 KB per engine) in memory for as long as the name lives: the watcher
 * keeps a few hundred readings per backend, which made ~36 KB x readings x backends of heap. Call
 * it on every string that outlives the parse (labels kept in a Reading, error texts).
 */
export function detach(s: string): string {
  return (" " + s).slice(1);
}

/** Names quoted in error messages are clipped: a 50 MB "name" must not end up in a log line. */
const clip = (s: string) => (s.length > 60 ? `${s.slice(0, 60)}...` : s);

const isBlank = (c: number) => c === SPACE || c === TAB;
const isDigit = (c: number) => c >= 48 && c <= 57;
const isLetter = (c: number) => (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
/** Label names: [a-zA-Z_][a-zA-Z0-9_]*; metric names also allow ':' anywhere. */
const isNameStart = (c: number, colon: boolean) => isLetter(c) || c === 95 || (colon && c === 58);
const isNameChar = (c: number, colon: boolean) => isNameStart(c, colon) || isDigit(c);

/**
 * Cursor over one line [pos, end) of the body. A malformed line is reported by returning a message
 * string rather than by throwing: a 50 MB junk body has millions of bad lines, and building an Error
 * (with its stack trace) for each would cost far more than scanning them.
 */
class LineScanner {
  constructor(
    readonly text: string,
    public pos: number,
    readonly end: number,
  ) {}

  skipBlanks(): void {
    while (this.pos < this.end && isBlank(this.text.charCodeAt(this.pos))) this.pos++;
  }

  atEnd(): boolean {
    return this.pos >= this.end;
  }

  peek(): number {
    return this.pos < this.end ? this.text.charCodeAt(this.pos) : -1;
  }

  /** Reads a name; returns "" when none starts here. */
  name(colon: boolean): string {
    const start = this.pos;
    if (this.pos < this.end && isNameStart(this.text.charCodeAt(this.pos), colon)) {
      this.pos++;
      while (this.pos < this.end && isNameChar(this.text.charCodeAt(this.pos), colon)) this.pos++;
    }
    return this.text.slice(start, this.pos);
  }

  /** Reads up to the next blank or the end of the line. */
  token(): string {
    const start = this.pos;
    while (this.pos < this.end && !isBlank(this.text.charCodeAt(this.pos))) this.pos++;
    return this.text.slice(start, this.pos);
  }

  /**
   * Reads a double-quoted label value (the opening quote is at pos), unescaped; null if unterminated.
   * It finds the closing quote first, so an unterminated value (typical of junk) costs one scan and
   * no string building, and a value without escapes (typical of real bodies) is one slice.
   */
  quoted(): string | null {
    const { text, end } = this;
    const start = this.pos + 1;
    let i = start;
    let escapes = false;
    while (i < end) {
      const c = text.charCodeAt(i);
      if (c === QUOTE) break;
      if (c === BACKSLASH) {
        escapes = true;
        i += 2;
      } else i++;
    }
    if (i >= end) return null;
    this.pos = i + 1;
    return escapes ? unescapeLabel(text, start, i) : text.slice(start, i);
  }
}

/** Label-value escapes: \\ \" \n; any other escape is kept verbatim, as Prometheus does. */
function unescapeLabel(text: string, start: number, close: number): string {
  let out = "";
  let chunk = start;
  for (let i = start; i < close; i++) {
    if (text.charCodeAt(i) !== BACKSLASH) continue;
    out += text.slice(chunk, i);
    const next = text.charCodeAt(i + 1);
    if (next === BACKSLASH) out += "\\";
    else if (next === QUOTE) out += '"';
    else if (next === LOWER_N) out += "\n";
    else out += text.slice(i, i + 2);
    i++;
    chunk = i + 1;
  }
  return out + text.slice(chunk, close);
}

/** Unescapes a HELP docstring: only \\ and \n are escapes there. */
function unescapeHelp(s: string): string {
  if (s.indexOf("\\") === -1) return s;
  let out = "";
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === BACKSLASH && i + 1 < s.length) {
      const n = s.charCodeAt(i + 1);
      if (n === BACKSLASH || n === LOWER_N) {
        out += n === BACKSLASH ? "\\" : "\n";
        i++;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

/**
 * Parses a float the way Go's strconv.ParseFloat does for what exporters print. Number() alone is
 * not enough: it accepts "", " 1 " and "0x1F", which would turn junk into numbers.
 */
export function parseFloatStrict(tok: string): number | null {
  return floatAt(tok, 0, tok.length, true);
}

/**
 * The float in text[start, end) (see parseFloatStrict), or null. With `value` false it only says
 * whether there is one (NaN for any valid token), without building a string: how the family
 * filter checks the shape of a line it skips.
 */
function floatAt(text: string, start: number, end: number, value: boolean): number | null {
  if (start >= end) return null;
  let i = start;
  const c0 = text.charCodeAt(start);
  const signed = c0 === PLUS || c0 === MINUS;
  if (signed) i++;
  if (i < end && !isDigit(text.charCodeAt(i)) && text.charCodeAt(i) !== DOT) {
    const word = text.slice(i, end).toLowerCase();
    if (word === "inf" || word === "infinity") return c0 === MINUS ? -Infinity : Infinity;
    if (word === "nan" && !signed) return NaN;
    return null;
  }
  let digits = 0;
  while (i < end && isDigit(text.charCodeAt(i))) {
    i++;
    digits++;
  }
  if (i < end && text.charCodeAt(i) === DOT) {
    i++;
    while (i < end && isDigit(text.charCodeAt(i))) {
      i++;
      digits++;
    }
  }
  if (digits === 0) return null;
  if (i < end && (text.charCodeAt(i) | 32) === LOWER_E) {
    i++;
    if (i < end && (text.charCodeAt(i) === PLUS || text.charCodeAt(i) === MINUS)) i++;
    const expStart = i;
    while (i < end && isDigit(text.charCodeAt(i))) i++;
    if (i === expStart) return null;
  }
  if (i !== end) return null;
  return value ? Number(start === 0 && end === text.length ? text : text.slice(start, end)) : NaN;
}

/** Timestamps are integer milliseconds (int64 in the spec; beyond 2^53 they lose precision here). */
function parseTimestamp(tok: string): number | null {
  let i = 0;
  const c0 = tok.charCodeAt(0);
  if (c0 === PLUS || c0 === MINUS) i++;
  if (i === tok.length) return null;
  for (; i < tok.length; i++) if (!isDigit(tok.charCodeAt(i))) return null;
  return Number(tok);
}

/**
 * Reads `{...}` (the brace is at pos) into `labels`; returns an error message or null. Label names
 * come from the scraped server, so "__proto__" is set as an own property, never as the prototype.
 */
function parseLabels(s: LineScanner, labels: Record<string, string>): string | null {
  s.pos++; // "{"
  for (;;) {
    s.skipBlanks();
    if (s.atEnd()) return "unterminated label set (no closing brace)";
    if (s.peek() === CLOSE_BRACE) {
      s.pos++;
      return null;
    }
    const name = s.name(false);
    if (name === "") return `invalid label name at "${s.text.slice(s.pos, Math.min(s.end, s.pos + 20))}"`;
    s.skipBlanks();
    if (s.peek() !== EQUALS) return `expected "=" after label name "${clip(name)}"`;
    s.pos++;
    s.skipBlanks();
    if (s.peek() !== QUOTE) return `expected a quoted value for label "${clip(name)}"`;
    const value = s.quoted();
    if (value === null) return `unterminated value for label "${clip(name)}"`;
    if (Object.hasOwn(labels, name)) return `duplicate label "${clip(name)}"`;
    if (name === "__proto__") {
      Object.defineProperty(labels, name, { value, enumerable: true, writable: true, configurable: true });
    } else {
      labels[name] = value;
    }
    s.skipBlanks();
    const c = s.peek();
    if (c === COMMA) s.pos++;
    else if (c === CLOSE_BRACE) {
      s.pos++;
      return null;
    } else if (s.atEnd()) return "unterminated label set (no closing brace)";
    else return `expected "," or "}" after label "${clip(name)}"`;
  }
}

/**
 * Where the line just parsed ends its name and labels (the blank before the value), and what a
 * comment kept: written by the line parsers for the LineCache, read right after the call.
 */
interface Capture {
  prefixEnd: number;
  /** HELP, TYPE, or 0 when the comment kept nothing. */
  keyword: number;
  family: string;
  value: string;
}

const HELP = 1;
const TYPE = 2;

function captureComment(c: Capture, keyword: number, family: string, value: string): void {
  c.keyword = keyword;
  c.family = family;
  c.value = value;
}

/** Parses a sample line [start, end) whose first character is not blank; returns it or an error message. */
function parseSampleLine(text: string, start: number, end: number, capture: Capture | null): Sample | string {
  const s = new LineScanner(text, start, end);
  const name = s.name(true);
  if (name === "") return "no metric name at the start of the line";
  let beforeValue = s.pos;
  s.skipBlanks();
  const labels: Record<string, string> = {};
  if (s.peek() === OPEN_BRACE) {
    const err = parseLabels(s, labels);
    if (err !== null) return err;
    beforeValue = s.pos;
    s.skipBlanks();
  }
  if (s.atEnd()) return `no value for "${clip(name)}"`;
  // The value must be separated by a blank: "up1" is a name, "up{}1" and "up-1" are malformed.
  if (s.pos === beforeValue) return `unexpected character "${text[s.pos]}" after "${clip(name)}"`;
  if (capture !== null) capture.prefixEnd = beforeValue;
  const valueTok = s.token();
  const value = parseFloatStrict(valueTok);
  if (value === null) return `invalid value "${valueTok.slice(0, 40)}" for "${clip(name)}"`;
  s.skipBlanks();
  if (s.atEnd()) return { name, labels, value };
  const tsTok = s.token();
  const timestampMs = parseTimestamp(tsTok);
  if (timestampMs === null) return `invalid timestamp "${tsTok.slice(0, 40)}" for "${clip(name)}"`;
  s.skipBlanks();
  if (!s.atEnd()) return `unexpected text after the timestamp of "${clip(name)}"`;
  return { name, labels, value, timestampMs };
}

/** Handles a line whose first character is "#"; returns an error message or null. */
function parseCommentLine(
  text: string,
  start: number,
  end: number,
  types: Map<string, string>,
  help: Map<string, string>,
  families: ReadonlySet<string> | null,
  capture: Capture | null,
): string | null {
  if (capture !== null) capture.keyword = 0;
  const s = new LineScanner(text, start + 1, end);
  s.skipBlanks();
  const keyword = s.token();
  if (keyword !== "HELP" && keyword !== "TYPE") return null; // an ordinary comment
  s.skipBlanks();
  const name = s.name(true);
  if (name === "") return `# ${keyword} without a valid metric name`;
  if (!s.atEnd() && !isBlank(s.peek())) return `invalid metric name in # ${keyword}`;
  const keep = families === null || inFamilies(name, families);
  if (keyword === "HELP") {
    // One separator blank, then the docstring verbatim (vLLM's HELP texts keep trailing spaces).
    if (!s.atEnd()) s.pos++;
    if (!keep) return null;
    const doc = unescapeHelp(text.slice(s.pos, end));
    if (!help.has(name)) help.set(name, doc);
    if (capture !== null) captureComment(capture, HELP, name, doc);
    return null;
  }
  s.skipBlanks();
  const type = s.token();
  if (type === "") return `# TYPE ${clip(name)} without a type`;
  s.skipBlanks();
  if (!s.atEnd()) return `unexpected text after "# TYPE ${clip(name)} ${clip(type)}"`;
  if (!keep) return null;
  if (!types.has(name)) types.set(name, type);
  if (capture !== null) captureComment(capture, TYPE, name, type);
  return null;
}

/**
 * A family filter, compiled once per Set of names: besides the names, the hashes of every name a
 * kept sample may have (a family, plus each suffix), so a line of another family is told apart on
 * a number computed while its name is scanned, without building the name as a string.
 */
interface CompiledFilter {
  names: ReadonlySet<string>;
  hashes: Set<number>;
  /** The LineCache templates of this filter (see LineTemplate). */
  templates: Map<string, LineTemplate>;
}

const nameHash = (h: number, c: number) => (Math.imul(h, 31) + c) | 0;

function hashOf(name: string): number {
  let h = 0;
  for (let i = 0; i < name.length; i++) h = nameHash(h, name.charCodeAt(i));
  return h;
}

const compiled = new WeakMap<ReadonlySet<string>, CompiledFilter>();

function compileFilter(families: Iterable<string>): CompiledFilter {
  const names: ReadonlySet<string> = families instanceof Set ? families : new Set(families);
  let c = compiled.get(names);
  if (!c) {
    const hashes = new Set<number>();
    for (const f of names) {
      hashes.add(hashOf(f));
      for (const x of FAMILY_SUFFIXES) hashes.add(hashOf(f + x));
    }
    c = { names, hashes, templates: new Map() };
    compiled.set(names, c);
  }
  return c;
}

/**
 * With a family filter: true (and counted) when the line is a sample outside the families. Its
 * labels are not parsed: a cheap look at its shape (a name, an optional {...}, a number) tells a
 * sample from junk, and a line that fails it is left to parseSampleLine, which reports why, so
 * "Service Unavailable" is an error with or without the filter and garbage still reads as garbage.
 */
function skipByName(text: string, start: number, end: number, filter: CompiledFilter, result: ParseResult, capture: Capture | null): boolean {
  let c = text.charCodeAt(start);
  if (!isNameStart(c, true)) return false;
  let h = nameHash(0, c);
  let i = start + 1;
  while (i < end && isNameChar((c = text.charCodeAt(i)), true)) {
    h = nameHash(h, c);
    i++;
  }
  // A matching hash is checked on the name itself (two names may share a hash).
  if (filter.hashes.has(h) && inFamilies(text.slice(start, i), filter.names)) return false;
  let afterName = i;
  while (i < end && isBlank(text.charCodeAt(i))) i++;
  if (i < end && text.charCodeAt(i) === OPEN_BRACE) {
    // The label set ends at the line's last "}" (values and timestamps hold none); searched from
    // the end of the line, never past its start.
    let close = end - 1;
    while (close > i && text.charCodeAt(close) !== CLOSE_BRACE) close--;
    if (close <= i) return false;
    afterName = i = close + 1;
    while (i < end && isBlank(text.charCodeAt(i))) i++;
  }
  if (i === afterName || i >= end) return false;
  let tokEnd = i;
  while (tokEnd < end && !isBlank(text.charCodeAt(tokEnd))) tokEnd++;
  if (floatAt(text, i, tokEnd, false) === null) return false;
  if (capture !== null) capture.prefixEnd = afterName;
  result.skippedLines++;
  return true;
}

/**
 * What one line of a body was, kept by a LineCache so the next body's line at the same place is
 * read from it when it starts with the same text (see LineCache). Shared by every cache of the same
 * filter: a fleet of servers running the same engine writes the same lines, so a template exists
 * once, not once per backend. Every string in it is detached from the body it came from.
 */
class LineTemplate {
  constructor(
    /** SKIPPED (a sample outside the families), KEPT (a sample), COMMENT (a comment, whole). */
    readonly kind: number,
    /** A sample's text before the blank that precedes its value; a comment's whole line. */
    readonly text: string,
    /** KEPT: the sample's name. COMMENT: the family its HELP or TYPE was kept for, or "". */
    readonly name: string,
    /** KEPT: the sample's labels, frozen: every sample read from this template shares them. */
    readonly labels: Readonly<Record<string, string>>,
    /** COMMENT: HELP, TYPE or 0 (kept nothing), and the docstring or type it kept. */
    readonly keyword: number,
    readonly value: string,
  ) {}
}

const SKIPPED = 1;
const KEPT = 2;
const COMMENT = 3;
const NO_LABELS: Readonly<Record<string, string>> = Object.freeze({});

/** Templates of all caches, per filter (null: no filter); cleared when it passes this many. */
const MAX_TEMPLATES = 20_000;
/** Lines past this many in one body are not remembered (a 2 MB junk page must not be). */
const MAX_CACHED_LINES = 10_000;
const unfilteredTemplates = new Map<string, LineTemplate>();

/**
 * The lines of a target's last body, so the next body of the same target parses only its values.
 * Why: the watcher reads the same server every few seconds, and between two reads the lines of its
 * /metrics keep their names and labels and order; only the values move. A line that starts with
 * the same text as the line at its place last time, followed by a blank, is that series again: its
 * name and labels are the ones read last time (no label parsing, no new strings), its value is
 * parsed as always. Prometheus does the same for its scrapes (its scrape cache keys a series by the
 * raw text of its name and labels). Anything else (a new line, a changed label, a line with an
 * error, a value the cached reading would not accept) is parsed in full, as without a cache, and
 * remembered for the next body. So the result is the same with or without it (tests/unit/
 * line-cache.test.ts compares both on real scrapes and on mutated ones); only the time differs.
 * One per target: pass the same object with each body of that target.
 */
export class LineCache {
  /** Lines read from a template (the fast path), for tests and benchmarks. */
  hits = 0;
  /** Lines parsed in full. */
  misses = 0;
  /** @internal */ filter: CompiledFilter | null | undefined = undefined;
  /** @internal by line index; null: parse in full (blank, an error, past MAX_CACHED_LINES). */
  lines: Array<LineTemplate | null> = [];
}

/** The template for a line just parsed in full, shared with every cache of the same filter. */
function templateOf(
  table: Map<string, LineTemplate>,
  kind: number,
  text: string,
  start: number,
  end: number,
  sample: Sample | null,
  capture: Capture,
): LineTemplate {
  const key = text.slice(start, end);
  let t = table.get(key);
  if (t === undefined) {
    if (table.size >= MAX_TEMPLATES) table.clear();
    let labels = NO_LABELS;
    if (sample !== null) {
      const copy: Record<string, string> = {};
      for (const k of Object.keys(sample.labels)) {
        const v = detach(sample.labels[k]);
        if (k === "__proto__") Object.defineProperty(copy, k, { value: v, enumerable: true, writable: true, configurable: true });
        else copy[detach(k)] = v;
      }
      labels = Object.freeze(copy);
    }
    const keyword = kind === COMMENT ? capture.keyword : 0;
    t = new LineTemplate(
      kind,
      detach(key),
      sample !== null ? detach(sample.name) : keyword !== 0 ? detach(capture.family) : "",
      labels,
      keyword,
      keyword !== 0 ? detach(capture.value) : "",
    );
    table.set(t.text, t);
  }
  return t;
}

/**
 * Reads line [pos, end) from its template when it starts with the template's text and the rest is
 * what a full parse would accept the same way; false (nothing done) otherwise, and the caller parses
 * it in full. For a skipped sample with labels, a "}" after the template's text would move where
 * skipByName ends the label set, so such a line is parsed in full.
 */
function replayLine(text: string, pos: number, end: number, t: LineTemplate, result: ParseResult): boolean {
  // A slice compared with === (memcmp in V8) is ~5x faster than startsWith(t.text, pos) here.
  let i = pos + t.text.length;
  if (text.slice(pos, i) !== t.text) return false;
  if (t.kind === COMMENT) {
    if (i !== end) return false;
    if (t.keyword === HELP) {
      if (!result.help.has(t.name)) result.help.set(t.name, t.value);
    } else if (t.keyword === TYPE) {
      if (!result.types.has(t.name)) result.types.set(t.name, t.value);
    }
    return true;
  }
  if (i >= end || !isBlank(text.charCodeAt(i))) return false;
  while (i < end && isBlank(text.charCodeAt(i))) i++;
  let tokEnd = i;
  while (tokEnd < end && !isBlank(text.charCodeAt(tokEnd))) tokEnd++;
  if (t.kind === SKIPPED) {
    if (floatAt(text, i, tokEnd, false) === null) return false;
    if (t.text.charCodeAt(t.text.length - 1) === CLOSE_BRACE) for (let j = tokEnd; j < end; j++) if (text.charCodeAt(j) === CLOSE_BRACE) return false;
    result.skippedLines++;
    return true;
  }
  const value = floatAt(text, i, tokEnd, true);
  if (value === null) return false;
  i = tokEnd;
  while (i < end && isBlank(text.charCodeAt(i))) i++;
  if (i >= end) {
    result.samples.push({ name: t.name, labels: t.labels as Record<string, string>, value });
    return true;
  }
  tokEnd = i;
  while (tokEnd < end && !isBlank(text.charCodeAt(tokEnd))) tokEnd++;
  const timestampMs = parseTimestamp(text.slice(i, tokEnd));
  if (timestampMs === null) return false;
  i = tokEnd;
  while (i < end && isBlank(text.charCodeAt(i))) i++;
  if (i !== end) return false;
  result.samples.push({ name: t.name, labels: t.labels as Record<string, string>, value, timestampMs });
  return true;
}

/**
 * Parses a whole body. Never throws: a malformed line becomes a ParseError and is skipped, and the
 * caller decides whether too many errors make the body garbage (see parseVllmMetrics in ./vllm).
 */
export function parsePrometheus(text: string, opts: ParseOptions = {}): ParseResult {
  const maxErrors = opts.maxErrors ?? DEFAULT_MAX_ERRORS;
  const filter = opts.families === undefined ? null : compileFilter(opts.families);
  const families = filter?.names ?? null;
  const result: ParseResult = { samples: [], types: new Map(), help: new Map(), errors: [], errorCount: 0, skippedLines: 0 };
  const cache = opts.cache ?? null;
  if (cache !== null && cache.filter !== filter) {
    cache.filter = filter;
    cache.lines = [];
  }
  const table = filter?.templates ?? unfilteredTemplates;
  const memo = cache?.lines ?? null;
  const capture: Capture | null = cache !== null ? { prefixEnd: 0, keyword: 0, family: "", value: "" } : null;
  const len = text.length;
  let lineNo = 0;
  let pos = 0;
  while (pos < len) {
    let nl = text.indexOf("\n", pos);
    if (nl === -1) nl = len;
    const index = lineNo++;
    let end = nl;
    if (end > pos && text.charCodeAt(end - 1) === CR) end--;
    if (memo !== null && index < memo.length) {
      const t = memo[index];
      if (t !== null && replayLine(text, pos, end, t, result)) {
        cache!.hits++;
        pos = nl + 1;
        continue;
      }
    }
    let template: LineTemplate | null = null;
    let first = pos;
    while (first < end && isBlank(text.charCodeAt(first))) first++;
    if (first < end) {
      let err: string | null;
      if (text.charCodeAt(first) === HASH) {
        err = parseCommentLine(text, first, end, result.types, result.help, families, capture);
        if (err === null && capture !== null) template = templateOf(table, COMMENT, text, pos, end, null, capture);
      } else if (filter !== null && skipByName(text, first, end, filter, result, capture)) {
        err = null;
        if (capture !== null) template = templateOf(table, SKIPPED, text, pos, capture.prefixEnd, null, capture);
      } else {
        const sample = parseSampleLine(text, first, end, capture);
        if (typeof sample === "string") err = sample;
        else {
          if (capture !== null) {
            template = templateOf(table, KEPT, text, pos, capture.prefixEnd, sample, capture);
            // The template's detached name and labels: a slice of the body kept by a reading
            // would keep the whole body alive.
            sample.name = template.name;
            sample.labels = template.labels as Record<string, string>;
          }
          result.samples.push(sample);
          err = null;
        }
      }
      if (err !== null) {
        result.errorCount++;
        if (result.errors.length < maxErrors) {
          result.errors.push({ line: lineNo, message: err, text: text.slice(pos, Math.min(end, pos + ERROR_TEXT_CHARS)) });
        }
      }
    }
    if (memo !== null) {
      cache!.misses++;
      if (index < MAX_CACHED_LINES) memo[index] = template;
    }
    pos = nl + 1;
  }
  if (memo !== null && memo.length > lineNo) memo.length = Math.min(lineNo, MAX_CACHED_LINES);
  return result;
}
