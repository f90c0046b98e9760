// Inline SVG charts: no library, no inline style markup (the CSP forbids
// it), and a text alternative for screen readers.

export interface Point {
  x: number; // epoch ms
  y: number;
}

interface LineChartProps {
  title: string;
  points: Point[];
  yMax?: number;
  format: (y: number) => string;
  summary: string; // spoken and shown as the caption's second line
}

const W = 420;
const H = 140;
const PAD = { l: 44, r: 8, t: 8, b: 20 };

// chartID is the id of a chart's caption, which names its figure.
function chartID(title: string): string {
  return "chart-" + title.toLowerCase().replace(/[^a-z0-9]+/g, "-");
}

export function LineChart({ title, points, yMax, format, summary }: LineChartProps) {
  const id = chartID(title);
  if (points.length === 0) {
    return (
      <figure className="chart" aria-labelledby={id}>
        <figcaption id={id}>{title}</figcaption>
        <p className="muted">No data yet.</p>
      </figure>
    );
  }
  const xs = points.map((p) => p.x);
  const x0 = Math.min(...xs);
  const x1 = Math.max(...xs);
  const top = yMax ?? Math.max(1, ...points.map((p) => p.y));
  const sx = (x: number) => PAD.l + (x1 === x0 ? (W - PAD.l - PAD.r) / 2 : ((x - x0) / (x1 - x0)) * (W - PAD.l - PAD.r));
  const sy = (y: number) => H - PAD.b - (y / top) * (H - PAD.t - PAD.b);
  const path = points.map((p, i) => `${i ? "L" : "M"}${sx(p.x).toFixed(1)},${sy(p.y).toFixed(1)}`).join(" ");
  const area = `${path} L${sx(x1).toFixed(1)},${sy(0)} L${sx(x0).toFixed(1)},${sy(0)} Z`;
  return (
    <figure className="chart" aria-labelledby={id}>
      <figcaption id={id}>
        {title}
        <span className="muted"> — {summary}</span>
      </figcaption>
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={`${title}: ${summary}`} className="chart-svg">
        <line className="axis" x1={PAD.l} y1={sy(0)} x2={W - PAD.r} y2={sy(0)} />
        <line className="axis" x1={PAD.l} y1={PAD.t} x2={PAD.l} y2={sy(0)} />
        <text className="tick" x={PAD.l - 4} y={sy(top) + 4} textAnchor="end">
          {format(top)}
        </text>
        <text className="tick" x={PAD.l - 4} y={sy(0)} textAnchor="end">
          {format(0)}
        </text>
        <path className="area" d={area} />
        <path className="line" d={path} />
        {points.map((p, i) => (
          <circle key={i} className="dot" cx={sx(p.x)} cy={sy(p.y)} r={2.5}>
            <title>{`${new Date(p.x).toISOString()}: ${format(p.y)}`}</title>
          </circle>
        ))}
      </svg>
    </figure>
  );
}

// BarList is a horizontal bar per label, as an accessible list.
export function BarList({ title, rows }: { title: string; rows: [string, number][] }) {
  const max = Math.max(1, ...rows.map(([, v]) => v));
  const id = chartID(title);
  return (
    <figure className="chart" aria-labelledby={id}>
      <figcaption id={id}>{title}</figcaption>
      <ul className="bars">
        {rows.map(([label, v]) => (
          <li key={label}>
            <span className="bar-label">{label}</span>
            <svg className="bar" viewBox="0 0 100 10" preserveAspectRatio="none" aria-hidden="true">
              <rect x="0" y="0" height="10" width={(v / max) * 100} />
            </svg>
            <span className="bar-value">{v}</span>
          </li>
        ))}
      </ul>
    </figure>
  );
}
