import type { Metadata, Viewport } from "next";
import type { ReactNode } from "react";
import { TimeZoneProvider } from "@/components/TimeZone";
import { TopBar } from "@/components/TopBar";
import { currentOperatorName } from "@/lib/api/operator";
import { replicaLine } from "@/lib/api/cluster";
import "./globals.css";

// Every page shows who is signed in, which needs the runtime: rendered per request, never at build
// (a prerendered page, /_not-found among them, would start the watcher inside `next build`).
export const dynamic = "force-dynamic";

export const metadata: Metadata = {
  title: { default: "stepwatch", template: "%s · stepwatch" },
  description: "Model servers watched from their own metrics, restarted only when an operator confirms.",
  // public/: favicon.ico (32 px), icon.svg, icon-192/512.png and apple-touch-icon.png (rendered from icon.svg).
  icons: {
    icon: [{ url: "/favicon.ico", sizes: "32x32" }, { url: "/icon.svg", type: "image/svg+xml" }],
    apple: "/apple-touch-icon.png",
  },
  manifest: "/manifest.webmanifest",
};

export const viewport: Viewport = {
  width: "device-width",
  initialScale: 1,
  themeColor: [
    { media: "(prefers-color-scheme: light)", color: "#ffffff" },
    { media: "(prefers-color-scheme: dark)", color: "#171c24" },
  ],
};

export default async function RootLayout({ children }: { children: ReactNode }) {
  const [operator, replica] = await Promise.all([currentOperatorName(), replicaLine()]);
  return (
    <html lang="en">
      <body>
        <TimeZoneProvider>
          <TopBar operator={operator} replica={replica} />
          <main>{children}</main>
        </TimeZoneProvider>
      </body>
    </html>
  );
}
