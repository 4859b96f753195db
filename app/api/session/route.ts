import { NextResponse } from "next/server";
import { z } from "zod";
import { errorResponse } from "@/lib/api/respond";
import { assertSameOrigin, authState, clearSessionCookie, clientAddress, currentDeviceCookie, currentPrincipal, currentSession, currentToken, setDeviceCookie, setSessionCookie } from "@/lib/api/operator";
import { mintDevice, recognisedDevice } from "@/lib/auth/device";
import { beginSession, endSessionByToken } from "@/lib/auth/session";
import { signIn } from "@/lib/auth/signin";
import { auditSession, auditSignInFailure } from "@/lib/auth/audit";
import { DomainError } from "@/lib/core/errors";
import { readJson } from "../_lib/body";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

const SignIn = z.strictObject({ name: z.string().min(1).max(100), password: z.string().min(1).max(1000) });

function withRetryAfter(res: Response, e: unknown): Response {
  if (e instanceof DomainError && e.code === "rate-limited" && typeof e.details?.retryAfterSeconds === "number") {
    res.headers.set("retry-after", String(e.details.retryAfterSeconds));
  }
  return res;
}

/** Who am I: {operator: name, role, via, expiresAt} or {operator: null}. (`operator` is the name, viewers included.) */
export async function GET(): Promise<Response> {
  try {
    const p = await currentPrincipal();
    return NextResponse.json(
      { operator: p?.name ?? null, role: p?.role ?? null, via: p?.via ?? null, expiresAt: p?.expiresAt ?? null },
      { headers: { "cache-control": "no-store" } },
    );
  } catch (e) {
    return errorResponse(e);
  }
}

/** Sign in with {name, password}: sets the session cookie; 401 on bad credentials, 429 when throttled. */
export async function POST(req: Request): Promise<Response> {
  try {
    assertSameOrigin(req);
    const body = await readJson(req, SignIn);
    const { rt, key, throttle, gate } = await authState();
    const address = clientAddress(req);
    // A device this name signed in from before is not queued behind anonymous guessers (lib/auth/device.ts).
    const device = recognisedDevice(await currentDeviceCookie(req), body.name, key, Date.now());
    const operator = await signIn(
      { name: body.name, password: body.password, clientAddress: address, now: Date.now(), device },
      { operators: rt.config.operators, throttle, gate, onFailure: (name, addr, why) => auditSignInFailure(rt.db.db, name, addr, why) },
    );
    const now = Date.now();
    const { token, session } = beginSession(rt.db.db, { operator, key, now, address, userAgent: req.headers.get("user-agent") });
    const res = NextResponse.json({ operator: session.name, expiresAt: session.expiresAt }, { headers: { "cache-control": "no-store" } });
    setSessionCookie(res, req, token, session.expiresAt);
    if (!device) {
      const d = mintDevice(operator.name, key, now);
      setDeviceCookie(res, req, d.value, d.expiresAt);
    }
    return res;
  } catch (e) {
    return withRetryAfter(errorResponse(e), e);
  }
}

/** Sign out: ends this session on the server (the token stops working at once) and clears the cookie. */
export async function DELETE(req: Request): Promise<Response> {
  try {
    assertSameOrigin(req);
    const { rt } = await authState();
    const s = await currentSession();
    endSessionByToken(rt.db.db, await currentToken(req));
    if (s) auditSession(rt.db.db, "signout", s.name, clientAddress(req));
    const res = NextResponse.json({ operator: null });
    clearSessionCookie(res, req);
    return res;
  } catch (e) {
    return errorResponse(e);
  }
}
