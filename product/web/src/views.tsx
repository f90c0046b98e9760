import { useEffect, useState } from "react";
import {
  Accounting,
  ApiError,
  ApplyResult,
  Approval,
  Conflict,
  EvidenceDetail,
  LifecycleDetail,
  LifecycleEvent,
  LifecycleSummary,
  ResolutionSummary,
  WorkerText,
  api,
} from "./api";
import { BarList, LineChart, Point } from "./charts";
import { fmtInt, fmtMs, fmtPct, fmtTime, shortId } from "./format";

export function ErrorNote({ error }: { error: unknown }) {
  const msg = error instanceof ApiError ? `${error.detail.kind}: ${error.detail.message}` : String(error);
  return (
    <p className="error" role="alert">
      {msg}
    </p>
  );
}

// WorkerWords shows free text a worker wrote as what it is: quoted, after
// a label saying whose words they are and that Needle never checked them
// (the CLI's and MCP's "worker's description (unverified)").
function WorkerWords({ w, what }: { w: WorkerText; what: string }) {
  if (!w.text) return null;
  return (
    <span className="worker-text" data-unverified={String(w.unverified)} data-source={w.source}>
      <span className="badge unverified" title="Written by a worker; Needle did not verify it">
        {what} (unverified)
      </span>{" "}
      <q>{w.text}</q>
    </span>
  );
}

function KindBadge({ r }: { r: ResolutionSummary }) {
  return (
    <span className={"badge " + (r.hit ? "hit" : r.kind === "miss" || r.kind === "partial_hit" ? "miss" : "other")}>
      {r.hit ? "hit" : "miss"} · {r.kind}
    </span>
  );
}

// Charts over the accounting series: hit rate and tokens saved over time.
export function Charts({ acct }: { acct: Accounting }) {
  // Each point counts its own bucket; the charts read cumulatively.
  let res = 0;
  let hits = 0;
  let cum = 0;
  const rate: Point[] = acct.series.map((p) => {
    res += p.resolutions;
    hits += p.hits;
    return { x: Date.parse(p.at), y: res ? hits / res : 0 };
  });
  const saved: Point[] = acct.series.map((p) => ({ x: Date.parse(p.at), y: (cum += p.tokens_saved) }));
  return (
    <div className="charts">
      <LineChart title="Hit rate" points={rate} yMax={1} format={fmtPct} summary={`${fmtPct(acct.hit_rate)} overall`} />
      <LineChart title="Tokens saved" points={saved} format={fmtInt} summary={`${fmtInt(acct.tokens_saved)} in total`} />
    </div>
  );
}

export function Totals({ acct }: { acct: Accounting }) {
  const cells: [string, string][] = [
    ["Resolutions", fmtInt(acct.resolutions)],
    ["Hits", fmtInt(acct.hits)],
    ["Hit rate", fmtPct(acct.hit_rate)],
    ["Worker runs", fmtInt(acct.worker_runs)],
    ["Tokens spent", fmtInt(acct.tokens_spent)],
    ["Tokens saved", fmtInt(acct.tokens_saved)],
  ];
  return (
    <dl className="totals" aria-label="Accounting totals">
      {cells.map(([k, v]) => (
        <div key={k} className="total">
          <dt>{k}</dt>
          <dd data-total={k}>{v}</dd>
        </div>
      ))}
    </dl>
  );
}

export function FeedView({ feed, acct, fresh }: { feed: ResolutionSummary[]; acct?: Accounting; fresh: Set<number> }) {
  return (
    <section aria-labelledby="feed-h">
      <h1 id="feed-h">Need feed</h1>
      {acct && <Totals acct={acct} />}
      {acct && <Charts acct={acct} />}
      <table className="feed">
        <caption>Recent resolutions, newest first; new ones appear as they happen.</caption>
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Resolution</th>
            <th scope="col">Need</th>
            <th scope="col" className="num">Tokens spent</th>
            <th scope="col" className="num">Tokens saved</th>
            <th scope="col" className="num">Latency</th>
            <th scope="col">Evidence</th>
          </tr>
        </thead>
        <tbody>
          {feed.length === 0 && (
            <tr>
              <td colSpan={7} className="muted">
                No resolutions yet.
              </td>
            </tr>
          )}
          {feed.map((r) => (
            <tr key={r.resolution_id} data-resolution={r.resolution_id} className={fresh.has(r.resolution_id) ? "fresh" : ""}>
              <td>{fmtTime(r.at)}</td>
              <td>
                <KindBadge r={r} />
              </td>
              <td>
                <span className="route">{r.route}</span> <code>{r.subject.kind}:{r.subject.name}</code>
                <div className="muted mono">{shortId(r.need_id)}</div>
              </td>
              <td className="num">{fmtInt(r.tokens_spent)}</td>
              <td className="num">{fmtInt(r.tokens_saved)}</td>
              <td className="num">{fmtMs(r.latency_ms)}</td>
              <td>
                {r.artifact_ids.length === 0 && <span className="muted">none</span>}
                {r.artifact_ids.map((id) => (
                  <a key={id} href={`#/evidence/${id}`} className="mono">
                    {shortId(id)}
                  </a>
                ))}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

export function AccountingView({ acct }: { acct?: Accounting }) {
  if (!acct) return <p>Loading…</p>;
  const kinds = Object.entries(acct.by_kind).sort((a, b) => b[1] - a[1]);
  return (
    <section aria-labelledby="acct-h">
      <h1 id="acct-h">Accounting</h1>
      <Totals acct={acct} />
      <p>
        Worker tokens without reuse would have been <strong>{fmtInt(acct.tokens_baseline)}</strong>; with reuse{" "}
        <strong>{fmtInt(acct.tokens_spent)}</strong> were spent.
      </p>
      <Charts acct={acct} />
      <BarList title="Resolutions by kind" rows={kinds} />
    </section>
  );
}

export function EvidenceView({ id }: { id: string }) {
  const [ev, setEv] = useState<EvidenceDetail>();
  const [err, setErr] = useState<unknown>();
  useEffect(() => {
    setEv(undefined);
    api.evidence(id).then(setEv, setErr);
  }, [id]);
  if (err) return <ErrorNote error={err} />;
  if (!ev) return <p>Loading…</p>;
  const a = ev.artifact;
  return (
    <section aria-labelledby="ev-h">
      <h1 id="ev-h">
        Evidence <code>{shortId(a.artifact_id)}</code>
      </h1>
      <dl className="facts">
        <dt>Artifact</dt>
        <dd className="mono">{a.artifact_id}</dd>
        <dt>Kind</dt>
        <dd>{a.kind}</dd>
        <dt>Subject</dt>
        <dd>
          <code>
            {a.subject.kind}:{a.subject.name}
          </code>
        </dd>
        <dt>Status</dt>
        <dd>
          <span className={"badge " + (a.status === "certified" ? "hit" : "miss")}>{a.status}</span>
        </dd>
        <dt>Freshness now</dt>
        <dd>
          <span className={"badge " + (ev.freshness.state === "stale" ? "miss" : "hit")} data-freshness={ev.freshness.state}>
            {ev.freshness.state}
          </span>{" "}
          checked {fmtTime(ev.freshness.checked_at)}, {ev.freshness.changed} changed
        </dd>
      </dl>
      {a.reasons.length > 0 && (
        <>
          <h2>Rejection reasons</h2>
          <ul>
            {a.reasons.map((r, i) => (
              <li key={i}>{r}</li>
            ))}
          </ul>
        </>
      )}
      {a.locations.length > 0 && (
        <>
          <h2>Locations</h2>
          <ul>
            {a.locations.map((l, i) => (
              <li key={i}>
                <code>
                  {l.path}:{l.start_line}-{l.end_line}
                </code>
                {l.symbol && <> {l.symbol}</>}
              </li>
            ))}
          </ul>
        </>
      )}
      {a.steps.length > 0 && (
        <>
          <h2>Flow</h2>
          <ol>
            {a.steps.map((s) => (
              <li key={s.ordinal}>
                <code>
                  {s.location.path}:{s.location.start_line}-{s.location.end_line}
                </code>{" "}
                <WorkerWords w={s.description} what="worker's description" />
              </li>
            ))}
          </ol>
        </>
      )}
      {a.tests.length > 0 && (
        <>
          <h2>Tests</h2>
          <ul>
            {a.tests.map((t) => (
              <li key={t.package + t.name}>
                <code>{t.name}</code> in <code>{t.path}</code> — <code>{t.command}</code>
              </li>
            ))}
          </ul>
        </>
      )}
      <h2>Certificate</h2>
      {ev.certificate ? (
        <dl className="facts">
          <dt>Id</dt>
          <dd className="mono">{ev.certificate.certificate_id}</dd>
          <dt>Validator</dt>
          <dd>{ev.certificate.validator_version}</dd>
          <dt>Obligations</dt>
          <dd>{ev.certificate.obligations.join(", ")}</dd>
          <dt>Issued</dt>
          <dd>{fmtTime(ev.certificate.created_at)}</dd>
        </dl>
      ) : (
        <p className="muted">None: this artifact is not certified.</p>
      )}
      <table>
        <caption>Dependencies and their state now</caption>
        <thead>
          <tr>
            <th scope="col">Kind</th>
            <th scope="col">Path</th>
            <th scope="col">Digest</th>
            <th scope="col">State</th>
          </tr>
        </thead>
        <tbody>
          {ev.dependencies.map((d) => (
            <tr key={d.kind + d.path}>
              <td>{d.kind}</td>
              <td>
                <code>{d.path}</code>
              </td>
              <td className="mono">{shortId(d.digest)}</td>
              <td>
                <span className={"badge " + (d.state === "fresh" ? "hit" : "miss")}>{d.state}</span>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

export function LifecyclesView({ items }: { items: LifecycleSummary[] }) {
  return (
    <section aria-labelledby="lc-h">
      <h1 id="lc-h">Change lifecycles</h1>
      <table>
        <caption>Supervised changes, most recently updated first.</caption>
        <thead>
          <tr>
            <th scope="col">Lifecycle</th>
            <th scope="col">Task</th>
            <th scope="col">Phase</th>
            <th scope="col">Status</th>
            <th scope="col">Updated</th>
            <th scope="col" className="num">Events</th>
          </tr>
        </thead>
        <tbody>
          {items.length === 0 && (
            <tr>
              <td colSpan={6} className="muted">
                No lifecycles yet. Start one with <code>needle change start</code>.
              </td>
            </tr>
          )}
          {items.map((l) => (
            <tr key={l.lifecycle_id} data-lifecycle={l.lifecycle_id}>
              <td>
                <a href={`#/lifecycles/${l.lifecycle_id}`} className="mono">
                  {l.lifecycle_id}
                </a>
                <div className="muted mono">{l.change_id}</div>
              </td>
              <td>
                {l.corrupt ? (
                  <span className="corrupt" data-corrupt={l.lifecycle_id}>
                    {l.corrupt}
                  </span>
                ) : (
                  l.task
                )}
              </td>
              <td>{l.phase}</td>
              <td>
                <StatusBadge s={l} />
              </td>
              <td>{fmtTime(l.updated_at)}</td>
              <td className="num">{l.events}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

function StatusBadge({ s }: { s: LifecycleSummary }) {
  return (
    <span className={"badge status-" + s.status} data-status={s.status}>
      {s.status.replace(/_/g, " ")}
      {s.reason && s.reason !== s.status ? ` (${s.reason.replace(/_/g, " ")})` : ""}
    </span>
  );
}

export function LifecycleView({ id, version }: { id: string; version: number }) {
  const [d, setD] = useState<LifecycleDetail>();
  const [events, setEvents] = useState<LifecycleEvent[]>([]);
  const [err, setErr] = useState<unknown>();
  const [reload, setReload] = useState(0);
  useEffect(() => {
    let live = true;
    Promise.all([api.lifecycle(id), api.lifecycleEvents(id)]).then(
      ([d, e]) => {
        if (live) {
          setD(d);
          setEvents(e.items);
          setErr(undefined);
        }
      },
      (e) => live && setErr(e),
    );
    return () => {
      live = false;
    };
  }, [id, version, reload]);
  if (err) return <ErrorNote error={err} />;
  if (!d) return <p>Loading…</p>;
  const s = d.summary;
  return (
    <section aria-labelledby="lcd-h">
      <h1 id="lcd-h">
        Lifecycle <code>{s.lifecycle_id}</code>
      </h1>
      <p>
        {s.task} <StatusBadge s={s} /> <span className="muted">change {s.change_id}, round {s.round}</span>
      </p>
      <ol className="phases" aria-label="Phases">
        {d.phases.map((p) => (
          <li key={p.phase} className={"phase phase-" + p.status} aria-current={p.status === "active" ? "step" : undefined}>
            <span className="phase-name">{p.phase}</span>
            <span className="phase-status">{p.status}</span>
          </li>
        ))}
      </ol>
      <div className="columns">
        <div>
          <h2>Patch</h2>
          {d.patch ? (
            <>
              <p className="mono">
                {d.patch.patch_id} (revision {d.patch.revision})
              </p>
              <ul>
                {d.patch.files.map((f) => (
                  <li key={f.path}>
                    <code>{f.path}</code> {f.op}, {fmtInt(f.bytes)} bytes
                  </li>
                ))}
              </ul>
            </>
          ) : (
            <p className="muted">No patch yet.</p>
          )}
          <h2>Tests</h2>
          <ul>
            {d.tests.map((t) => (
              <li key={t.test} data-test={t.test}>
                <code>{t.test}</code> <span className={"badge " + (t.outcome === "passed" ? "hit" : "miss")}>{t.outcome || "not run"}</span>
                {t.outcome && <span className="muted"> {fmtMs(t.duration_ms)}</span>}
              </li>
            ))}
          </ul>
          <h2>Verification</h2>
          {d.verification ? (
            <>
              <p>
                <span className={"badge " + (d.verification.verdict === "verified" ? "hit" : "miss")}>{d.verification.verdict}</span>{" "}
                <span className="mono">{shortId(d.verification.verification_id)}</span>
              </p>
              <ol aria-label="Acceptance criteria">
                {d.verification.criteria.map((c) => (
                  <li key={c.digest}>
                    {c.status.replace(/_/g, " ")} <span className="mono">{shortId(c.digest)}</span>
                  </li>
                ))}
              </ol>
            </>
          ) : (
            <p className="muted">Not verified yet.</p>
          )}
          <ApprovePanel key={s.lifecycle_id} detail={d} onDone={() => setReload((n) => n + 1)} />
          <CancelPanel key={"cancel-" + s.lifecycle_id} detail={d} onDone={() => setReload((n) => n + 1)} />
        </div>
        <div>
          <h2>Events</h2>
          <ol className="timeline" aria-label="Lifecycle events in order">
            {events.map((e) => (
              <li key={e.seq} data-seq={e.seq} data-kind={e.kind}>
                <span className="seq">#{e.seq}</span> <time dateTime={e.at}>{fmtTime(e.at)}</time> <strong>{e.kind}</strong>{" "}
                <span className="muted">
                  → {e.phase}/{e.status.replace(/_/g, " ")}
                </span>
                <div>{e.summary}</div>
                {e.detail && (
                  <div>
                    <WorkerWords w={e.detail} what="worker's report" />
                  </div>
                )}
                <div className="muted mono">payload {shortId(e.payload_digest)}</div>
              </li>
            ))}
          </ol>
        </div>
      </div>
    </section>
  );
}

function Digests({ title, d }: { title: string; d: { patch: string; verification: string; lifecycle: string } }) {
  return (
    <dl className="digests" aria-label={title}>
      <dt>Patch</dt>
      <dd className="mono" data-digest="patch">
        {d.patch}
      </dd>
      <dt>Verification</dt>
      <dd className="mono" data-digest="verification">
        {d.verification}
      </dd>
      <dt>Lifecycle</dt>
      <dd className="mono" data-digest="lifecycle">
        {d.lifecycle}
      </dd>
    </dl>
  );
}

function ConflictNote({ c, message }: { c?: Conflict; message: string }) {
  return (
    <div className="conflict" role="alert" id="conflict">
      <h3>Refused: conflict (409)</h3>
      <p>{message}</p>
      {c && (
        <>
          <p>
            Reason: <strong data-conflict-reason={c.reason}>{c.reason.replace(/_/g, " ")}</strong>
          </p>
          {c.paths.length > 0 && (
            <>
              <p>These paths changed in the work tree since the patch was made:</p>
              <ul>
                {c.paths.map((p) => (
                  <li key={p}>
                    <code>{p}</code>
                  </li>
                ))}
              </ul>
            </>
          )}
          {c.reason === "digest_mismatch" && (
            <>
              <h4>Approved digests</h4>
              <Digests title="Approved digests" d={c.expected} />
              <h4>Current digests</h4>
              <Digests title="Current digests" d={c.actual} />
            </>
          )}
        </>
      )}
      <p>
        {c?.reason === "work_tree_drift"
          ? "Nothing was written. Put these files back as the patch found them, or start a new change on the current source; the approval stands and the apply can be retried."
          : "Nothing was recorded or written. Reload to see the lifecycle as it is now."}
      </p>
    </div>
  );
}

// CancelPanel cancels a lifecycle that is not applying and not over: the
// phase running now is interrupted (its worker's turn, or its test run)
// and cleaned up before the answer comes.
function CancelPanel({ detail, onDone }: { detail: LifecycleDetail; onDone: () => void }) {
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState<unknown>();
  const st = detail.summary.status;
  if (st !== "running" && st !== "awaiting_approval" && st !== "approved") {
    return null;
  }
  const go = async () => {
    setBusy(true);
    setErr(undefined);
    try {
      await api.cancel(detail.summary.lifecycle_id, { note: "cancelled in the UI" });
      onDone();
    } catch (e) {
      setErr(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section className="cancel" aria-labelledby="cancel-h">
      <h2 id="cancel-h">Cancel</h2>
      <p>Cancelling ends the lifecycle: the phase running now is interrupted and its work cleaned up; nothing is applied.</p>
      <button type="button" onClick={go} disabled={busy} aria-describedby="cancel-h">
        {busy ? "Cancelling… (stopping the running phase)" : "Cancel this lifecycle"}
      </button>
      {err ? <ErrorNote error={err} /> : null}
    </section>
  );
}

// ApprovePanel shows the three digests an approval binds and, on request,
// approves exactly those and applies; an approved lifecycle (an apply
// refused earlier, say) can be applied again.
function ApprovePanel({ detail, onDone }: { detail: LifecycleDetail; onDone: () => void }) {
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<ApplyResult>();
  const [approval, setApproval] = useState<Approval | undefined>(detail.approval.approval);
  const [err, setErr] = useState<unknown>();
  const a = detail.approval;
  const st = detail.summary.status;
  const canApply = st === "approved" && approval !== undefined;
  if (!a.awaiting && !canApply && !result && !err) {
    return (
      <>
        <h2>Approval</h2>
        <p className="muted">
          {st === "applied" ? "Applied." : "Not awaiting approval (the lifecycle is " + st.replace(/_/g, " ") + ")."}
        </p>
        {approval && <Digests title="Approved digests" d={approval.digests} />}
      </>
    );
  }
  const go = async () => {
    setBusy(true);
    setErr(undefined);
    try {
      const ap = approval ?? (await api.approve(detail.summary.lifecycle_id, { digests: a.digests }));
      setApproval(ap);
      setResult(await api.apply(detail.summary.lifecycle_id, { approval_id: ap.approval_id }));
      onDone();
    } catch (e) {
      setErr(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section className="approve" aria-labelledby="ap-h">
      <h2 id="ap-h">{approval ? "Apply the approved patch" : "Approve and apply"}</h2>
      <p>Approving binds exactly these digests. If any of them, or the work tree under the patch, changes before the apply, nothing is written.</p>
      <Digests title={approval ? "Approved digests" : "Digests to approve"} d={approval ? approval.digests : a.digests} />
      {!result && (
        <button type="button" onClick={go} disabled={busy} aria-describedby="ap-h">
          {busy ? "Applying…" : approval ? "Apply the approved patch" : "Approve these digests and apply"}
        </button>
      )}
      <div aria-live="polite">
        {result && (
          <p className="ok" role="status" id="applied">
            Applied patch <span className="mono">{shortId(result.patch_id)}</span> to {result.files} file(s) at {fmtTime(result.applied_at)}.
          </p>
        )}
        {result?.notes?.map((n) => (
          <p key={n} className="muted" data-note="">
            Note: {n}
          </p>
        ))}
      </div>
      {err instanceof ApiError && err.status === 409 ? <ConflictNote c={err.detail.conflict} message={err.detail.message} /> : err ? <ErrorNote error={err} /> : null}
    </section>
  );
}
