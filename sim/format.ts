/**
 * Prometheus text exposition exactly as vLLM's Python client writes it (version 0.0.4).
 *
 * Why byte-level fidelity matters: stepwatch's parser must survive what real vLLM sends, so the
 * simulator reproduces its quirks: floats always carry ".0", values of 7+ integer digits switch to
 * an exponent padded like Go ("1.78990180866e+09", even "1.0777853952e+010"), label names sorted,
 * a separate `_created` gauge family after each counter and histogram.
 */

export type Labels = Record<string, string>;

/** Python's repr() of a float: shortest round-trip digits, "1.0" for integers, exponent outside 1e-4..1e16. */
export function pythonFloatRepr(d: number): string {
  if (Number.isNaN(d)) return "nan";
  if (!Number.isFinite(d)) return d > 0 ? "inf" : "-inf";
  if (Number.isInteger(d) && Math.abs(d) < 1e16) return d.toFixed(1);
  // Fast path: in Python's fixed-notation range JS prints the same shortest digits without an exponent.
  const abs = Math.abs(d);
  if (abs >= 1e-4 && abs < 1e16) return String(d);
  const [mantissa, expText] = d.toExponential().split("e");
  const exp = Number(expText);
  if (exp < -4 || exp >= 16) {
    const sign = exp < 0 ? "-" : "+";
    return `${mantissa}e${sign}${String(Math.abs(exp)).padStart(2, "0")}`;
  }
  return String(d);
}

/**
 * prometheus_client's floatToGoString: Python repr, but Go switches to an exponent sooner, so a
 * positive value with more than 6 digits before the dot is rewritten as "d.ddd" + "e+0" + digits.
 */
export function formatValue(d: number): string {
  // Fast path for the common case (counts): small non-negative integers print as "N.0".
  if (Number.isInteger(d) && d >= 0 && d < 1e6) return `${d}.0`;
  if (d === Infinity) return "+Inf";
  if (d === -Infinity) return "-Inf";
  if (Number.isNaN(d)) return "NaN";
  const s = pythonFloatRepr(d);
  const dot = s.indexOf(".");
  if (d > 0 && dot > 6) {
    const mantissa = `${s[0]}.${s.slice(1, dot)}${s.slice(dot + 1)}`.replace(/[0.]+$/, "");
    return `${mantissa}e+0${dot - 1}`;
  }
  return s;
}

function escapeLabelValue(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
}

export function formatLabels(labels: Labels): string {
  const keys = Object.keys(labels).sort();
  if (keys.length === 0) return "";
  return `{${keys.map((k) => `${k}="${escapeLabelValue(labels[k])}"`).join(",")}}`;
}

export type MetricType = "counter" | "gauge" | "histogram" | "summary";

/** Accumulates exposition lines; one family = HELP + TYPE + its samples, as the Python client writes. */
export class Exposition {
  private readonly lines: string[] = [];

  family(name: string, type: MetricType, help: string): this {
    this.lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    return this;
  }

  sample(name: string, labels: Labels, value: number): this {
    this.lines.push(`${name}${formatLabels(labels)} ${formatValue(value)}`);
    return this;
  }

  /** A sample whose label set is already formatted (hot loops: histogram buckets of 1000 backends). */
  sampleFormatted(name: string, labelText: string, value: number): this {
    this.lines.push(`${name}${labelText} ${formatValue(value)}`);
    return this;
  }

  text(): string {
    return this.lines.length ? `${this.lines.join("\n")}\n` : "";
  }
}
