import { NextResponse } from "next/server";
import { z } from "zod";
import { errorResponse } from "@/lib/api/respond";
import { assertSameOrigin, authState, clientAddress, currentSession, isHttps } from "@/lib/auth/server";
import { SESSION_COOKIE } from "@/lib/auth/session";
import { signIn } from "@/lib/auth/signin";
import { DomainError } from "@/lib/errors";
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

/** Who am I: {operator, expiresAt} or {operator: null}. */
export async function GET(): Promise<Response> {
  try {
    const s = await currentSession();
    return NextResponse.json({ operator: s?.name ?? null, expiresAt: s?.expiresAt ?? null }, { headers: { "cache-control": "no-store" } });
  } catch (e) {
    return errorResponse(e);
  }
}

/** Sign in with {name, password}: sets the session cookie; 401 on bad credentials, 429 when throttled. */
export async function POST(req: Request): Promise<Response> {
  try {
    assertSameOrigin(req);
    const body = await readJson(req, SignIn);
    const { rt, key, throttle } = await authState();
    const { token, session } = await signIn(
      { name: body.name, password: body.password, clientAddress: clientAddress(req), now: Date.now() },
      { operators: rt.config.operators, throttle, key },
    );
    const res = NextResponse.json({ operator: session.name, expiresAt: session.expiresAt }, { headers: { "cache-control": "no-store" } });
    res.cookies.set(SESSION_COOKIE, token, {
      httpOnly: true,
      sameSite: "strict",
      secure: isHttps(req),
      path: "/",
      expires: new Date(session.expiresAt),
    });
    return res;
  } catch (e) {
    return withRetryAfter(errorResponse(e), e);
  }
}

/** Sign out: clears the cookie (tokens are stateless; they also expire on their own). */
export async function DELETE(req: Request): Promise<Response> {
  try {
    assertSameOrigin(req);
    const res = NextResponse.json({ operator: null });
    res.cookies.set(SESSION_COOKIE, "", { httpOnly: true, sameSite: "strict", secure: isHttps(req), path: "/", maxAge: 0 });
    return res;
  } catch (e) {
    return errorResponse(e);
  }
}
