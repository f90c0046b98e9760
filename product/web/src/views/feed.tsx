import { Accounting, ResolutionSummary } from "../api";
import { BarList, LineChart, Point } from "../charts";
import { fmtInt, fmtMs, fmtPct, fmtTime, shortId } from "../format";

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
