// The PDF analytics report (pdfkit): the summary figures of the period with
// the previous period, charts of the daily series and of the series by
// platform drawn with pdfkit's vector API, and the top posts. Rendered by the
// report job (server/jobs/analytics.ts) from what app.analytics_report_claim
// returns, which is what the summary, aggregates and per-post routes answer
// for the same period, so the figures agree.
import PDFDocument from 'pdfkit';

export interface Figure {
  value: number;
  previous: number;
  change: number;
  changePercent: number | null;
}

export interface SeriesPoint {
  start: string;
  impressions: number;
  engagements: number;
  [k: string]: unknown;
}

export interface ReportData {
  report: { id: string; from: string; to: string; integrationIds: string[] | null };
  workspace: { id: string; name: string; timezone: string };
  integrations: { id: string; name: string; platform: string }[];
  summary: { metrics: Record<string, Figure>; previousPeriod: { from: string; to: string } };
  daily: { series: { key: string | null; label: string; points: SeriesPoint[] }[] };
  byPlatform: { interval: string; series: { key: string | null; label: string; points: SeriesPoint[] }[] };
  topPosts: {
    contentId: string;
    platform: string;
    title: string | null;
    caption: string | null;
    sentAt: string;
    impressions: number;
    engagements: number;
    engagementRatePercent: number;
  }[];
}

/** The rows of the summary table: label and the summary's metric key. */
export const SUMMARY_ROWS: [string, string][] = [
  ['Impressions', 'impressions'],
  ['Reach', 'reach'],
  ['Engagements', 'engagements'],
  ['Likes', 'likes'],
  ['Comments', 'comments'],
  ['Shares', 'shares'],
  ['Saves', 'saves'],
  ['Clicks', 'clicks'],
  ['Video views', 'videoViews'],
  ['Posts published', 'postsPublished'],
  ['Followers', 'followers'],
  ['Engagement rate (%)', 'engagementRatePercent'],
];

/** How a figure is written in the report (tests/api/analytics-report.test.ts reads it back). */
export function formatNumber(n: number): string {
  return Number.isInteger(n) ? n.toLocaleString('en-US') : n.toLocaleString('en-US', { minimumFractionDigits: 1, maximumFractionDigits: 2 });
}

export function formatChange(f: Figure): string {
  const sign = f.change > 0 ? '+' : '';
  const pct = f.changePercent === null ? 'n/a' : `${f.changePercent > 0 ? '+' : ''}${formatNumber(f.changePercent)}%`;
  return `${sign}${formatNumber(f.change)} (${pct})`;
}

/** One line of the summary table, as one text run. */
export function summaryLine(label: string, f: Figure): string {
  return `${label}: ${formatNumber(f.value)} | previous ${formatNumber(f.previous)} | change ${formatChange(f)}`;
}

/** User text in the standard fonts' encoding (Windows-1252): anything beyond Latin-1 becomes '?'. */
export function pdfSafe(text: string): string {
  return text.replace(/[^\x20-\x7e\xa0-\xff]/g, '?');
}

const COLORS = ['#2563eb', '#db2777', '#16a34a', '#ea580c', '#7c3aed', '#0891b2', '#ca8a04', '#64748b'];
const PAGE = { width: 595.28, height: 841.89, margin: 48 };

function niceMax(v: number): number {
  if (v <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

/** A line chart of one or more series on shared axes. */
function lineChart(doc: PDFKit.PDFDocument, x: number, y: number, w: number, h: number, title: string,
  labels: string[], series: { name: string; values: number[]; color: string }[]) {
  doc.font('Helvetica-Bold').fontSize(11).fillColor('#111827').text(title, x, y);
  const top = y + 20;
  const left = x + 48;
  const width = w - 56;
  const height = h - 48;
  const max = niceMax(Math.max(0, ...series.flatMap((s) => s.values)));
  const min = Math.min(0, ...series.flatMap((s) => s.values));
  const span = max - min || 1;
  const yOf = (v: number) => top + height - ((v - min) / span) * height;
  const xOf = (i: number) => left + (labels.length <= 1 ? width / 2 : (i * width) / (labels.length - 1));
  doc.lineWidth(0.5).strokeColor('#e5e7eb');
  doc.font('Helvetica').fontSize(7).fillColor('#6b7280');
  for (let t = 0; t <= 4; t++) {
    const v = min + (span * t) / 4;
    doc.moveTo(left, yOf(v)).lineTo(left + width, yOf(v)).stroke();
    doc.text(formatNumber(Math.round(v)), x, yOf(v) - 3, { width: 44, align: 'right' });
  }
  doc.strokeColor('#9ca3af').moveTo(left, top).lineTo(left, top + height).lineTo(left + width, top + height).stroke();
  const step = Math.max(1, Math.ceil(labels.length / 8));
  labels.forEach((l, i) => {
    if (i % step === 0 || i === labels.length - 1) doc.text(l.slice(5), xOf(i) - 14, top + height + 4, { width: 28, align: 'center' });
  });
  for (const s of series) {
    doc.lineWidth(1.5).strokeColor(s.color);
    s.values.forEach((v, i) => (i === 0 ? doc.moveTo(xOf(i), yOf(v)) : doc.lineTo(xOf(i), yOf(v))));
    if (s.values.length > 1) doc.stroke();
    for (let i = 0; i < s.values.length; i++) doc.circle(xOf(i), yOf(s.values[i]), 1.5).fill(s.color);
  }
  legend(doc, left, top + height + 18, series);
}

/** Grouped bars: one group per bucket, one bar per series. */
function barChart(doc: PDFKit.PDFDocument, x: number, y: number, w: number, h: number, title: string,
  labels: string[], series: { name: string; values: number[]; color: string }[]) {
  doc.font('Helvetica-Bold').fontSize(11).fillColor('#111827').text(title, x, y);
  const top = y + 20;
  const left = x + 48;
  const width = w - 56;
  const height = h - 48;
  const max = niceMax(Math.max(0, ...series.flatMap((s) => s.values)));
  const yOf = (v: number) => top + height - (Math.max(0, v) / max) * height;
  doc.lineWidth(0.5).strokeColor('#e5e7eb').font('Helvetica').fontSize(7).fillColor('#6b7280');
  for (let t = 0; t <= 4; t++) {
    const v = (max * t) / 4;
    doc.moveTo(left, yOf(v)).lineTo(left + width, yOf(v)).stroke();
    doc.text(formatNumber(Math.round(v)), x, yOf(v) - 3, { width: 44, align: 'right' });
  }
  const group = width / Math.max(1, labels.length);
  const bar = Math.max(0.5, (group * 0.8) / Math.max(1, series.length));
  labels.forEach((l, i) => {
    series.forEach((s, j) => {
      const v = s.values[i] ?? 0;
      const bx = left + i * group + group * 0.1 + j * bar;
      if (v > 0) doc.rect(bx, yOf(v), bar, top + height - yOf(v)).fill(s.color);
    });
    const step = Math.max(1, Math.ceil(labels.length / 8));
    if (i % step === 0) doc.fillColor('#6b7280').text(l.slice(5), left + i * group, top + height + 4, { width: Math.max(group, 28) });
  });
  doc.strokeColor('#9ca3af').moveTo(left, top).lineTo(left, top + height).lineTo(left + width, top + height).stroke();
  legend(doc, left, top + height + 18, series);
}

function legend(doc: PDFKit.PDFDocument, x: number, y: number, series: { name: string; color: string }[]) {
  let cx = x;
  doc.font('Helvetica').fontSize(8);
  for (const s of series) {
    doc.rect(cx, y, 8, 8).fill(s.color);
    doc.fillColor('#374151').text(s.name, cx + 11, y, { lineBreak: false });
    cx += 20 + doc.widthOfString(s.name);
  }
}

/** Renders the report; resolves with the PDF's bytes. */
export function renderReport(data: ReportData, now = new Date()): Promise<Buffer> {
  const doc = new PDFDocument({
    size: 'A4',
    margin: PAGE.margin,
    info: { Title: `Analytics report ${data.report.from} to ${data.report.to}`, Author: 'Pressroom', Subject: data.workspace.name, CreationDate: now },
  });
  const chunks: Buffer[] = [];
  const done = new Promise<Buffer>((resolve, reject) => {
    doc.on('data', (c: Buffer) => chunks.push(c));
    doc.on('end', () => resolve(Buffer.concat(chunks)));
    doc.on('error', reject);
  });
  const contentWidth = PAGE.width - 2 * PAGE.margin;
  const m = data.summary.metrics;

  // Page 1: title, summary, daily chart.
  doc.font('Helvetica-Bold').fontSize(20).fillColor('#111827').text('Analytics report');
  doc.font('Helvetica').fontSize(11).fillColor('#374151');
  doc.text(`Workspace: ${pdfSafe(data.workspace.name)}`);
  doc.text(`Period: ${data.report.from} to ${data.report.to} (${data.workspace.timezone})`);
  doc.text(`Compared with: ${data.summary.previousPeriod.from} to ${data.summary.previousPeriod.to}`);
  const names = data.integrations.map((i) => `${pdfSafe(i.name)} (${i.platform})`);
  doc.text(`Integrations: ${data.report.integrationIds === null ? 'all' : ''}${data.report.integrationIds === null && names.length ? ' - ' : ''}${names.join(', ') || 'none'}`, { width: contentWidth });
  doc.fontSize(8).fillColor('#6b7280').text(`Generated ${now.toISOString()} - report ${data.report.id}`);
  doc.moveDown(1);

  doc.font('Helvetica-Bold').fontSize(13).fillColor('#111827').text('Summary');
  doc.moveDown(0.3);
  let rowY = doc.y;
  SUMMARY_ROWS.forEach(([label, key], i) => {
    const f = m[key];
    if (!f) return;
    if (i % 2 === 0) doc.rect(PAGE.margin, rowY - 2, contentWidth, 15).fill('#f3f4f6');
    doc.font(i < 3 ? 'Helvetica-Bold' : 'Helvetica').fontSize(9.5).fillColor('#111827')
      .text(summaryLine(label, f), PAGE.margin + 4, rowY, { width: contentWidth - 8, lineBreak: false });
    rowY += 15;
  });
  doc.y = rowY + 12;

  const daily = data.daily.series[0]?.points ?? [];
  lineChart(doc, PAGE.margin, doc.y, contentWidth, 230, 'Impressions and engagements per day',
    daily.map((p) => p.start), [
      { name: 'Impressions', values: daily.map((p) => p.impressions), color: COLORS[0] },
      { name: 'Engagements', values: daily.map((p) => p.engagements), color: COLORS[1] },
    ]);

  // Page 2: by platform, top posts.
  doc.addPage();
  const buckets = data.byPlatform.series[0]?.points.map((p) => p.start) ?? daily.map((p) => p.start);
  barChart(doc, PAGE.margin, PAGE.margin, contentWidth, 240,
    `Impressions per ${data.byPlatform.interval} by platform`, buckets,
    data.byPlatform.series.map((s, i) => ({ name: pdfSafe(s.label), values: s.points.map((p) => p.impressions), color: COLORS[i % COLORS.length] })));
  doc.y = PAGE.margin + 280;
  doc.font('Helvetica-Bold').fontSize(13).fillColor('#111827').text('Top posts by impressions', PAGE.margin, doc.y);
  doc.moveDown(0.4);
  const cols = [PAGE.margin, PAGE.margin + 22, PAGE.margin + 92, PAGE.margin + 160, PAGE.margin + 360, PAGE.margin + 430];
  let y = doc.y;
  doc.font('Helvetica-Bold').fontSize(8.5).fillColor('#374151');
  ['#', 'Platform', 'Published', 'Post', 'Impressions', 'Engagements (rate)'].forEach((h, i) => doc.text(h, cols[i], y, { lineBreak: false }));
  y += 14;
  doc.font('Helvetica').fontSize(8.5);
  if (data.topPosts.length === 0) doc.fillColor('#6b7280').text('No post was published in this period.', PAGE.margin, y);
  data.topPosts.forEach((p, i) => {
    if (i % 2 === 0) doc.rect(PAGE.margin, y - 2, contentWidth, 14).fill('#f3f4f6');
    const text = pdfSafe((p.title || p.caption || '').replace(/\s+/g, ' ').trim());
    doc.fillColor('#111827');
    doc.text(String(i + 1), cols[0], y, { lineBreak: false });
    doc.text(p.platform, cols[1], y, { lineBreak: false });
    doc.text(p.sentAt.slice(0, 10), cols[2], y, { lineBreak: false });
    doc.text(text.length > 38 ? `${text.slice(0, 37)}...` : text || '(no caption)', cols[3], y, { width: 195, lineBreak: false });
    doc.text(formatNumber(p.impressions), cols[4], y, { lineBreak: false });
    doc.text(`${formatNumber(p.engagements)} (${formatNumber(p.engagementRatePercent)}%)`, cols[5], y, { lineBreak: false });
    y += 14;
  });
  doc.end();
  return done;
}
