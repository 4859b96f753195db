"use client";
/** "Reload now" on the Configuration page, for a signed-in operator: POST /api/config/reload. */
import { useRouter } from "next/navigation";
import { useState } from "react";
import type { ReloadResponse } from "@/lib/api/types";
import { sendJson } from "@/lib/ui/fetcher";

export function ReloadButton() {
  const router = useRouter();
  const [busy, setBusy] = useState(false);
  const [said, setSaid] = useState<string | null>(null);
  async function reload() {
    setBusy(true);
    setSaid(null);
    try {
      const r = await sendJson<ReloadResponse>("/api/config/reload", "POST");
      const parts = [
        r.added.length ? `added ${r.added.join(", ")}` : null,
        r.removed.length ? `removed ${r.removed.join(", ")}` : null,
        r.changed.length ? `changed ${r.changed.join(", ")}` : null,
      ].filter(Boolean);
      setSaid(`Reloaded: ${parts.length ? parts.join("; ") : "no target changed"}.`);
    } catch (e) {
      setSaid((e as Error).message);
    } finally {
      setBusy(false);
      router.refresh();
    }
  }
  return (
    <span className="reload">
      <button type="button" onClick={reload} disabled={busy} data-testid="config-reload">
        {busy ? "Reloading…" : "Reload now"}
      </button>
      {said ? (
        <span className="muted small" role="status" data-testid="config-reload-result">
          {" "}
          {said}
        </span>
      ) : null}
    </span>
  );
}
