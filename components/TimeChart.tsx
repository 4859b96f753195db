"use client";
/**
 * Time-series charts with uPlot. Chosen over SVG chart kits because it is made for exactly this:
 * ~50 KB, canvas-drawn, and it stays fast with thousands of points per series (a 7-day range at
 * per-minute resolution is ~10k points per line), with real time axes and gaps for nulls.
 * Restarts and state changes are drawn as vertical lines through a `draw` hook (no plugin package).
 * uPlot touches the DOM, so it is loaded in the browser only (dynamic import in an effect).
 */
import { useEffect, useRef, useState } from "react";
import type uPlotType from "uplot";
import "uplot/dist/uPlot.min.css";
import { isolatedPoints, markerNear, type Marker } from "@/lib/ui/chart";
import { formatAxisNumber, formatTick } from "@/lib/core/format";
import { STATE_TONE } from "@/lib/ui/state";
import { useTimeZone } from "./TimeZone";

export interface ChartSeries {
  label: string;
  /** A CSS custom property holding the colour, e.g. "--series-1". */
  color: string;
  /** Which y scale: series with different units get their own. */
  scale?: string;
  fill?: boolean;
  /** Legend value formatting. */
  format?: (v: number | null) => string;
}

export interface TimeChartProps {
  data: uPlotType.AlignedData;
  series: ChartSeries[];
  height: number;
  markers?: Marker[];
  /** Fixed x range in seconds (the chosen time range), so an empty chart still shows it. */
  xRange?: [number, number];
  /** Fixed y range per scale, e.g. { pct: [0, 100] }. */
  yRanges?: Record<string, [number, number]>;
  /**
   * Smallest top of an auto-scaled y axis per scale: an idle backend's 1-token probes must not
   * fill a sparkline as if it were at full speed.
   */
  yFloors?: Record<string, number>;
  /** No axes, legend or cursor: the fleet card's sparkline. */
  sparkline?: boolean;
  /** The chart's text alternative: what it shows and its figures, for screen readers. */
  ariaLabel: string;
  testId?: string;
}

/**
 * A y axis as wide as its longest label (uPlot's fixed default cut "10,000" to "0,000"):
 * measured on the canvas with the axis's own font.
 */
function axisSize(self: uPlotType, values: string[] | null, axisIdx: number, cycleNum: number): number {
  const axis = self.axes[axisIdx] as uPlotType.Axis & { _size?: number; font?: [string, number] | string };
  if (cycleNum > 1 && axis._size) return axis._size;
  const longest = (values ?? []).reduce((a, v) => (v.length > a.length ? v : a), "");
  const font = Array.isArray(axis.font) ? axis.font[0] : "12px system-ui, sans-serif";
  self.ctx.save();
  self.ctx.font = font;
  const w = longest ? self.ctx.measureText(longest).width / (window.devicePixelRatio || 1) : 0;
  self.ctx.restore();
  return Math.ceil(w + 18);
}

function cssVar(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || "#888";
}

function withAlpha(color: string, alpha: number): string {
  const m = /^#([0-9a-f]{6})$/i.exec(color);
  if (!m) return color;
  const n = parseInt(m[1], 16);
  return `rgba(${(n >> 16) & 255}, ${(n >> 8) & 255}, ${n & 255}, ${alpha})`;
}

/** Changes when the operator's OS switches light/dark, so the chart is redrawn in the new colours. */
function useColorScheme(): string {
  const [scheme, setScheme] = useState("light");
  useEffect(() => {
    const mq = window.matchMedia("(prefers-color-scheme: dark)");
    const update = () => setScheme(mq.matches ? "dark" : "light");
    update();
    mq.addEventListener("change", update);
    return () => mq.removeEventListener("change", update);
  }, []);
  return scheme;
}

export function TimeChart(props: TimeChartProps) {
  const { data, series, height, markers, xRange, yRanges, yFloors, sparkline, ariaLabel, testId } = props;
  const { timeZone, fmt } = useTimeZone();
  const [tip, setTip] = useState<{ left: number; marker: Marker } | null>(null);
  const host = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlotType | null>(null);
  const markersRef = useRef<Marker[]>(markers ?? []);
  const dataRef = useRef(data);
  const xRangeRef = useRef(xRange);
  const scheme = useColorScheme();
  // The series definitions rarely change; key the (re)creation on their text form.
  const seriesKey = JSON.stringify(series.map(({ format: _f, ...s }) => s)) + JSON.stringify(yRanges ?? {}) + JSON.stringify(yFloors ?? {});

  dataRef.current = data;
  xRangeRef.current = xRange;
  markersRef.current = markers ?? [];

  useEffect(() => {
    let cancelled = false;
    let ro: ResizeObserver | null = null;
    void import("uplot").then(({ default: uPlot }) => {
      if (cancelled || !host.current) return;
      const el = host.current;
      const axisColor = cssVar("--muted");
      const grid = { stroke: cssVar("--grid"), width: 1 };
      const tzDate = timeZone === "UTC" ? (ts: number) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC") : undefined;
      const scales: uPlotType.Scales = {
        x: { time: true, range: (_u, min, max) => (xRangeRef.current ? [xRangeRef.current[0], xRangeRef.current[1]] : [min, max]) },
      };
      for (const s of series) {
        const key = s.scale ?? "y";
        const fixed = yRanges?.[key];
        scales[key] = fixed
          ? { range: [fixed[0], fixed[1]] }
          : { range: (_u, _min, max) => [0, Math.max(max > 0 ? max * 1.1 : 1, yFloors?.[key] ?? 0)] };
      }
      const toneColors = { ok: cssVar("--ok"), warn: cssVar("--warn"), bad: cssVar("--bad"), info: cssVar("--info"), muted: cssVar("--muted") };
      const drawMarkers = (u: uPlotType) => {
        const ctx = u.ctx;
        const dpr = window.devicePixelRatio || 1;
        ctx.save();
        ctx.font = `${11 * dpr}px system-ui, sans-serif`;
        for (const m of markersRef.current) {
          const x = Math.round(u.valToPos(m.x, "x", true));
          if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
          const color = m.kind === "restart" ? toneColors.bad : toneColors[m.state ? STATE_TONE[m.state] : "muted"];
          ctx.strokeStyle = color;
          ctx.lineWidth = (m.kind === "restart" ? 2 : 1) * dpr;
          ctx.setLineDash(m.kind === "restart" ? [] : [4 * dpr, 3 * dpr]);
          ctx.beginPath();
          ctx.moveTo(x, u.bbox.top);
          ctx.lineTo(x, u.bbox.top + u.bbox.height);
          ctx.stroke();
          if (m.kind === "restart") {
            ctx.fillStyle = color;
            // Label on the side with room, so a restart at the right edge is not cut off.
            const w = ctx.measureText("restart").width;
            const right = x + 3 * dpr + w <= u.bbox.left + u.bbox.width;
            ctx.fillText("restart", right ? x + 3 * dpr : x - 3 * dpr - w, u.bbox.top + 11 * dpr);
          }
        }
        ctx.restore();
      };
      const opts: uPlotType.Options = {
        width: Math.max(50, el.clientWidth),
        height,
        scales,
        ...(tzDate ? { tzDate } : {}),
        legend: { show: !sparkline, live: true },
        cursor: sparkline ? { show: false } : { drag: { x: false, y: false } },
        select: { show: false, left: 0, top: 0, width: 0, height: 0 },
        // Room on the right for the last time tick's label ("09:15", not "09:1").
        padding: sparkline ? [2, 0, 2, 0] : [8, 22, 0, 0],
        axes: sparkline
          ? [{ show: false }, ...series.map(() => ({ show: false }))]
          : [
              {
                stroke: axisColor,
                grid,
                ticks: grid,
                // 24-hour ticks in the chosen zone (uPlot's default is "3:05am", in the browser's zone).
                values: (_u: uPlotType, splits: number[], _i: number, _space: number, incr: number) => splits.map((v) => formatTick(v * 1000, incr, timeZone)),
              },
              ...[...new Set(series.map((s) => s.scale ?? "y"))].map((scale, i) => ({
                scale,
                side: i === 0 ? 3 : 1,
                stroke: axisColor,
                grid: i === 0 ? grid : { show: false },
                ticks: grid,
                values: (_u: uPlotType, splits: number[]) => splits.map(formatAxisNumber),
                size: axisSize,
              })),
            ],
        series: [
          { value: (_u: uPlotType, v: number | null) => (v === null ? "—" : fmt(v * 1000)) },
          ...series.map((s) => {
            const stroke = cssVar(s.color);
            return {
              label: s.label,
              scale: s.scale ?? "y",
              stroke,
              width: sparkline ? 1.5 : 1.75,
              fill: s.fill ? withAlpha(stroke, 0.14) : undefined,
              spanGaps: false,
              // Lines only, except a value with no neighbour: with no line to draw it would be
              // invisible, and a panel would be blank while its text says "p50 now 0.15 s".
              points: {
                show: false,
                size: sparkline ? 4 : 5,
                fill: stroke,
                filter: (u: uPlotType, si: number) => {
                  const idx = isolatedPoints(u.data[si] as Array<number | null>);
                  return idx.length ? idx : null;
                },
              },
              value: s.format ? (_u: uPlotType, v: number | null) => s.format!(v) : undefined,
            };
          }),
        ],
        hooks: {
          draw: [drawMarkers],
          // Hovering a marker says what it was (the state entered and why; who restarted and why).
          setCursor: [
            (u: uPlotType) => {
              const left = u.cursor.left ?? -1;
              const m = left < 0 ? null : markerNear(markersRef.current, left, (x) => u.valToPos(x, "x"), 5);
              setTip((prev) => (m ? (prev?.marker === m ? prev : { left: u.valToPos(m.x, "x") + u.bbox.left / (window.devicePixelRatio || 1), marker: m }) : null));
            },
          ],
        },
      };
      plot.current?.destroy();
      plot.current = new uPlot(opts, dataRef.current, el);
      ro = new ResizeObserver(() => {
        if (plot.current && el.clientWidth > 0) plot.current.setSize({ width: el.clientWidth, height });
      });
      ro.observe(el);
    });
    return () => {
      cancelled = true;
      ro?.disconnect();
      plot.current?.destroy();
      plot.current = null;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps -- recreated only when the look changes
  }, [seriesKey, height, sparkline, scheme, timeZone]);

  useEffect(() => {
    plot.current?.setData(data);
  }, [data]);

  useEffect(() => {
    plot.current?.redraw(false);
  }, [markers, xRange?.[0], xRange?.[1]]);

  return (
    <div className="chart-host">
      <div ref={host} className={sparkline ? "spark" : "chart"} role="img" aria-label={ariaLabel} data-testid={testId} />
      {tip ? (
        <div className="marker-tip" role="tooltip" style={{ left: tip.left }} data-testid="marker-tip">
          <strong>{tip.marker.kind === "restart" ? "Restart" : `State: ${tip.marker.label}`}</strong> <span className="muted">{fmt(tip.marker.x * 1000)}</span>
          <div>{tip.marker.detail}</div>
        </div>
      ) : null}
    </div>
  );
}
