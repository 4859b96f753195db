import type { Metadata } from "next";
import { SignInForm } from "@/components/SignInForm";
import { safeNextPath } from "@/lib/core/next-path";
import { currentOperatorName } from "@/lib/api/operator";
import { getRuntime } from "@/lib/runtime";

export const metadata: Metadata = { title: "Sign in" };
export const dynamic = "force-dynamic";


export default async function SignInPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  // Only same-site paths: ?next=https://evil.example must not become an open redirect.
  const next = safeNextPath((await searchParams).next);
  // The demo's operator has a published clear-text password; say it, so a newcomer can try a restart.
  // Only an inline clear-text password of the embedded demo config is ever shown (it is public anyway).
  const demo = await getRuntime()
    .then((rt) => {
      const o = rt.demo ? rt.config.operators[0] : undefined;
      return o && o.password.kind === "plain" && o.password.source === "inline" ? { name: o.name, password: o.password.value } : null;
    })
    .catch(() => null);
  return <SignInForm next={next} operator={await currentOperatorName()} demoOperator={demo} />;
}
