"use client";
import { useRouter } from "next/navigation";
import { useState } from "react";
import { safeNextPath } from "@/lib/core/next-path";
import { ApiError, sendJson } from "@/lib/ui/fetcher";

export function SignInForm({ next, operator, demoOperator }: { next: string; operator: string | null; demoOperator: { name: string; password: string } | null }) {
  const router = useRouter();
  const [name, setName] = useState("");
  const [password, setPassword] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  async function submit(e: React.FormEvent) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await sendJson("/api/session", "POST", { name, password });
      router.replace(safeNextPath(next));
      router.refresh();
    } catch (err) {
      setError(
        err instanceof ApiError && err.status === 401
          ? "Unknown operator or wrong password."
          : err instanceof ApiError && err.status === 429
            ? err.message
            : `Sign-in failed: ${(err as Error).message}`,
      );
      setBusy(false);
    }
  }

  return (
    <div className="signin panel">
      <h1 style={{ marginBottom: ".4rem" }}>Sign in</h1>
      <p className="muted small" style={{ marginTop: 0 }}>
        Operators from the config can restart backends. Reading the fleet needs no sign-in.
        {operator ? ` You are signed in as ${operator}.` : ""}
      </p>
      {demoOperator ? (
        <div className="banner demo small" data-testid="demo-credentials">
          <strong>DEMO</strong>
          Sign in as <code>{demoOperator.name}</code> with the password <code>{demoOperator.password}</code> (from the embedded demo config).
        </div>
      ) : null}
      <form onSubmit={submit}>
        <div className="field">
          <label htmlFor="signin-name">Operator</label>
          <input id="signin-name" type="text" autoComplete="username" value={name} onChange={(e) => setName(e.target.value)} required data-testid="signin-name" />
        </div>
        <div className="field">
          <label htmlFor="signin-password">Password</label>
          <input
            id="signin-password"
            type="password"
            autoComplete="current-password"
            value={password}
            onChange={(e) => setPassword(e.target.value)}
            required
            data-testid="signin-password"
          />
        </div>
        {error ? (
          <p className="form-error" role="alert" data-testid="signin-error">
            {error}
          </p>
        ) : null}
        <div style={{ marginTop: "1rem" }}>
          <button type="submit" className="primary" disabled={busy} data-testid="signin-submit">
            {busy ? "Signing in…" : "Sign in"}
          </button>
        </div>
      </form>
    </div>
  );
}
