import { useEffect, useState } from "react";
import { EvidenceDetail, api } from "../api";
import { fmtTime, shortId } from "../format";
import { ErrorNote, WorkerWords } from "./common";

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
