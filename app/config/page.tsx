import type { Metadata } from "next";
import { ConfigBackends } from "@/components/ConfigBackends";
import { ConfigErrorBanner } from "@/components/ConfigErrorBanner";
import { ConfigProxies } from "@/components/ConfigProxies";
import { ReloadButton } from "@/components/ReloadButton";
import { Time } from "@/components/TimeZone";
import { currentPrincipal } from "@/lib/api/operator";
import { getConfigView } from "@/lib/api/config-view";
import type { ConfigView } from "@/lib/api/types";

export const metadata: Metadata = { title: "Configuration" };
export const dynamic = "force-dynamic";


/**
 * What config is loaded (backends and proxies editable by an operator: components/ConfigBackends.tsx,
 * components/ConfigProxies.tsx), from the same redacted view as GET /api/config (secrets as
 * `***`, or `env:NAME` as written). Reloaded by SIGHUP, a change of the file, or
 * POST /api/config/reload; this page shows the state when it was opened.
 */
export default async function ConfigPage() {
  let view: ConfigView | null = null;
  let failure: string | null = null;
  try {
    view = await getConfigView();
  } catch (e) {
    failure = (e as Error).message;
  }
  if (!view) {
    return (
      <div className="banner error" role="alert">
        <strong>Cannot read the configuration</strong>
        {failure}
      </div>
    );
  }
  const s = view.settings;
  // Buttons only for an operator: a viewer (or the demo fleet, which has no file) would get 403 or 409.
  const canEdit = view.demo ? false : (await currentPrincipal().catch(() => null))?.role === "operator";
  return (
    <>
      <ConfigErrorBanner error={view.configError} />
      <div className="page-head">
        <h1>Configuration</h1>
        <span className="meta" data-testid="config-source">
          {view.demo ? "embedded demo fleet (no file)" : view.path} · loaded <Time at={view.loadedAt} /> ({view.loadedBy})
        </span>
        {canEdit ? <ReloadButton /> : null}
      </div>
      <p className="muted small">
        Edit the file, or (an operator) the backends and proxies here: a change from this page is validated, written to the
        file (the previous one kept as <code>.bak</code>) and reloaded. stepwatch also reloads the file when it changes, on{" "}
        <code>SIGHUP</code>, or on <code>POST /api/config/reload</code>. A file with problems is not loaded; the running config stays.
        Secrets show as <code>***</code>, or as the <code>env:NAME</code> they are read from.
      </p>
      {view.lastChange ? (
        <p className="small" data-testid="config-last-change">
          Last reload <Time at={view.lastChange.at} /> ({view.lastChange.trigger}):{" "}
          {[
            view.lastChange.added.length ? `added ${view.lastChange.added.join(", ")}` : null,
            view.lastChange.removed.length ? `removed ${view.lastChange.removed.join(", ")}` : null,
            view.lastChange.changed.length ? `changed ${view.lastChange.changed.join(", ")}` : null,
          ]
            .filter(Boolean)
            .join("; ") || "no target changed"}
        </p>
      ) : null}

      <section className="section panel">
        <h2>Settings</h2>
        <dl className="metrics">
          {(
            [
              ["poll interval", `${s.pollIntervalSeconds} s`],
              ["stuck after", `${s.stuckAfterSeconds} s`],
              ["probe timeout", `${s.probeTimeoutSeconds} s`],
              ["idle probe every", `${s.idleProbeSeconds} s`],
              ["restart cooldown", `${s.restartCooldownSeconds} s`],
              ["recovery timeout", `${s.recoveryTimeoutSeconds} s`],
              ["startup grace", `${s.startupGraceSeconds} s`],
              ["vLLM latency histograms every", s.latencyEverySeconds === 0 ? "read" : `${s.latencyEverySeconds} s`],
              ["read threads", `${s.readThreadsRunning} running (readThreads ${JSON.stringify(s.readThreads)})`],
              ["/metrics token", s.metricsBearerToken ?? "none (public)"],
              ["raw readings kept", `${s.retention.rawHours} h`],
              ["rollups kept", `${s.retention.rollupDays} d`],
            ] as const
          ).map(([k, v]) => (
            <div key={k}>
              <dt>{k}</dt>
              <dd>{v}</dd>
            </div>
          ))}
        </dl>
      </section>

      <ConfigBackends backends={view.backends} canEdit={canEdit} />

      <ConfigProxies proxies={view.proxies} canEdit={canEdit} />

      <section className="section">
        <h2>Operators ({view.operators.length})</h2>
        <ul data-testid="config-operators">
          {view.operators.map((o) => (
            <li key={o.name}>
              {o.name} <span className="muted mono small">password {o.password}</span>
            </li>
          ))}
        </ul>
      </section>
    </>
  );
}
