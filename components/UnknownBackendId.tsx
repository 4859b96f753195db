"use client";
import { usePathname } from "next/navigation";

/** The id from the address (a not-found page gets no route params). */
export function UnknownBackendId() {
  const path = usePathname() ?? "";
  const id = decodeURIComponent(path.replace(/^\/backends\//, "").split("/")[0] ?? "");
  return <>No backend named “{id}”</>;
}
