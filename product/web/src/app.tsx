import { useCallback, useEffect, useRef, useState } from "react";
import { Accounting, ApiError, LifecycleSummary, ResolutionSummary, api, openStream } from "./api";
import { ErrorNote } from "./views/common";
import { EvidenceView } from "./views/evidence";
import { AccountingView, FeedView } from "./views/feed";
import { LifecycleView } from "./views/lifecycle";
import { LifecyclesView } from "./views/lifecycles";

// The feed keeps at most this many resolutions in memory.
const FEED_MAX = 200;

type Route = { view: "feed" } | { view: "accounting" } | { view: "lifecycles" } | { view: "lifecycle"; id: string } | { view: "evidence"; id: string };

function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  switch (parts[0]) {
    case "accounting":
      return { view: "accounting" };
    case "lifecycles":
      return parts[1] ? { view: "lifecycle", id: parts[1] } : { view: "lifecycles" };
    case "evidence":
      return parts[1] ? { view: "evidence", id: parts[1] } : { view: "feed" };
    default:
      return { view: "feed" };
  }
}

function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const f = () => setRoute(parseRoute(location.hash));
    window.addEventListener("hashchange", f);
    return () => window.removeEventListener("hashchange", f);
  }, []);
  return route;
}

type Live = "connecting" | "live" | "reconnecting";

export function App() {
  const route = useRoute();
  const [authed, setAuthed] = useState<boolean>();
  const [err, setErr] = useState<unknown>();
  const [feed, setFeed] = useState<ResolutionSummary[]>([]);
  const [fresh, setFresh] = useState<Set<number>>(new Set());
  const [acct, setAcct] = useState<Accounting>();
  const [lifecycles, setLifecycles] = useState<LifecycleSummary[]>([]);
  const [lcVersion, setLcVersion] = useState<Record<string, number>>({});
  const [live, setLive] = useState<Live>("connecting");
  const [generation, setGeneration] = useState(0); // bumped by a reset
  const acctTimer = useRef<number>(undefined);
  const probeTimer = useRef<number>(undefined);
  const wasAuthed = useRef(false);

  // probe asks /api/v1/status why the stream failed: 401 (the runtime
  // restarted, or the session ended) shows the login page; an answer
  // means the server is there, so a closed stream (refused, say 503 for
  // too many streams) is opened again over a fresh snapshot, after a
  // pause; no answer (the server is down) tries again later.
  const probe = useCallback((closed: boolean) => {
    window.clearTimeout(probeTimer.current);
    api.status().then(
      () => {
        if (closed) probeTimer.current = window.setTimeout(() => setGeneration((g) => g + 1), 2000);
      },
      (e) => {
        if (e instanceof ApiError && e.status === 401) setAuthed(false);
        else if (closed) probeTimer.current = window.setTimeout(() => probe(true), 3000);
      },
    );
  }, []);

  const refreshAccounting = useCallback(() => {
    window.clearTimeout(acctTimer.current);
    acctTimer.current = window.setTimeout(() => api.accounting().then(setAcct, setErr), 250);
  }, []);

  // Load the snapshot, then follow the stream from the snapshot's event id.
  useEffect(() => {
    let close = () => {};
    let cancelled = false;
    (async () => {
      try {
        const page = await api.needs(); // read first: its event_id is the oldest
        const [a, lc] = await Promise.all([api.accounting(), api.lifecycles()]);
        if (cancelled) return;
        setAuthed(true);
        wasAuthed.current = true;
        setFeed(page.items);
        setAcct(a);
        setLifecycles(lc.items);
        close = openStream(page.event_id, {
          resolution: (r) => {
            setFeed((f) => (f.some((x) => x.resolution_id === r.resolution_id) ? f : [r, ...f].slice(0, FEED_MAX)));
            setFresh((s) => new Set(s).add(r.resolution_id));
            refreshAccounting();
          },
          accounting: () => refreshAccounting(),
          lifecycle: (c) => {
            setLifecycles((ls) => [c.summary, ...ls.filter((l) => l.lifecycle_id !== c.summary.lifecycle_id)]);
            setLcVersion((v) => ({ ...v, [c.summary.lifecycle_id]: (v[c.summary.lifecycle_id] ?? 0) + 1 }));
          },
          reset: () => setGeneration((g) => g + 1),
          state: (st) => {
            setLive(st === "closed" ? "reconnecting" : st);
            if (st !== "live") probe(st === "closed");
          },
        });
      } catch (e) {
        if (cancelled) return;
        if (e instanceof ApiError && e.status === 401) setAuthed(false);
        else setErr(e);
      }
    })();
    return () => {
      cancelled = true;
      window.clearTimeout(probeTimer.current);
      close();
    };
  }, [generation, refreshAccounting, probe]);

  if (authed === false) return <Login ended={wasAuthed.current} />;
  if (authed === undefined && !err) return <p className="boot">Loading Needle…</p>;

  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <span className="brand">Needle</span>
        <nav aria-label="Views">
          <NavLink href="#/feed" current={route.view === "feed" || route.view === "evidence"}>
            Need feed
          </NavLink>
          <NavLink href="#/accounting" current={route.view === "accounting"}>
            Accounting
          </NavLink>
          <NavLink href="#/lifecycles" current={route.view === "lifecycles" || route.view === "lifecycle"}>
            Lifecycles
          </NavLink>
        </nav>
        <span className={"live live-" + live} role="status" aria-live="polite" id="live">
          {live === "live" ? "Live" : live === "reconnecting" ? "Reconnecting…" : "Connecting…"}
        </span>
        <button type="button" className="link" onClick={() => api.logout().finally(() => setAuthed(false))}>
          Log out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        {err ? <ErrorNote error={err} /> : null}
        {route.view === "feed" && <FeedView feed={feed} acct={acct} fresh={fresh} />}
        {route.view === "accounting" && <AccountingView acct={acct} />}
        {route.view === "evidence" && <EvidenceView key={route.id} id={route.id} />}
        {route.view === "lifecycles" && <LifecyclesView items={lifecycles} />}
        {route.view === "lifecycle" && <LifecycleView key={route.id} id={route.id} version={(lcVersion[route.id] ?? 0) + generation * 1000} />}
      </main>
    </>
  );
}

function NavLink({ href, current, children }: { href: string; current: boolean; children: React.ReactNode }) {
  return (
    <a href={href} aria-current={current ? "page" : undefined}>
      {children}
    </a>
  );
}

// Login is the page of a browser without a session: never logged in, or
// its session ended (the runtime restarted: sessions live in its memory).
function Login({ ended }: { ended: boolean }) {
  return (
    <main id="main" className="login">
      <h1>Needle</h1>
      <p role="alert" id="login-why">
        {ended
          ? "Your session ended: the runtime restarted (or you logged out). The data this tab showed may be out of date, so it is not shown."
          : "You are not logged in."}
      </p>
      <p>
        To log in, run <code>needle ui --open --data-dir DIR</code> on this machine (DIR is the data directory of{" "}
        <code>needle serve</code>): it opens a fresh one-time login link in your browser. Without <code>--open</code> it prints
        the link; the one <code>needle serve</code> printed at start works once. API clients send{" "}
        <code>Authorization: Bearer</code> with the token from the data directory instead.
      </p>
    </main>
  );
}
