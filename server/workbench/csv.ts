// CSV for the Workbench (server/routes/workbench.ts): the file's text to
// records with the line each starts on, and records to text. Parsing and
// writing are csv-parse and csv-stringify (RFC 4180: quoted fields, embedded
// line breaks, doubled quotes, a UTF-8 BOM); what the columns mean, and every
// rule about the values, is SQL's (api.import_workbench_csv,
// api.export_workbench_page in db/migrations, 13c-workbench-bulk.sql).
import { CsvError, parse } from 'csv-parse/sync';
import { stringify } from 'csv-stringify/sync';
import { ApiError } from '../errors.ts';

export interface CsvLine {
  /** The line of the file the record starts on (the header is line 1). */
  line: number;
  fields: string[];
}

export interface ParsedCsv {
  header: string[];
  lines: CsvLine[];
}

const NEWLINE = /\r\n|\r|\n/g;

/**
 * Formula injection (OWASP, "CSV Injection"): a spreadsheet runs a cell that
 * starts with =, +, -, @, a tab or a carriage return as a formula. Spreadsheets
 * and the tools in between also trim or normalise what comes before and what
 * looks like those characters, so a cell is formula-shaped when, after any
 * leading run of invisible characters (whitespace and line breaks, control
 * characters, Unicode format characters such as the zero-width space and the
 * byte order mark, other default-ignorable code points) and quotes, its first
 * character is one of those or a look-alike: the full-width ＝ ＋ － ＠ (Apple
 * Numbers normalises them), the small forms ﹦ ﹢ ﹣ ﹫ and the minus sign −.
 * The export puts a ' before a formula-shaped cell (quotes count among the
 * leading characters, so a value that already began with ' comes back whole);
 * the import takes exactly one ' off a cell that is a ' followed by a
 * formula-shaped value. An export imported again gives back the values it held.
 */
const FORMULA = /^['\s\p{Cc}\p{Cf}\p{Zs}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]*[=+\-@\t\r\uFF1D\uFF0B\uFF0D\uFF20\uFE66\uFE62\uFE63\uFE6B\u2212]/u;
const NEUTRALISED = /^'['\s\p{Cc}\p{Cf}\p{Zs}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]*[=+\-@\t\r\uFF1D\uFF0B\uFF0D\uFF20\uFE66\uFE62\uFE63\uFE6B\u2212]/u;

export function neutraliseFormula(value: string): string {
  return FORMULA.test(value) ? `'${value}` : value;
}

export function restoreFormula(value: string): string {
  return NEUTRALISED.test(value) ? value.slice(1) : value;
}

/**
 * Parses an import file: the first record is the header, blank lines and
 * records whose fields are all empty are skipped, records may have another number of fields than the header (SQL
 * reports those lines). A file that is not CSV (an unclosed quote, a quote
 * inside an unquoted field) is 400 CSV_MALFORMED with the line.
 */
export function parseCsv(text: string): ParsedCsv {
  let records: { info: { lines: number }; record: string[] }[];
  try {
    records = parse(text, {
      bom: true,
      info: true,
      relax_column_count: true,
      skip_empty_lines: true,
      skip_records_with_empty_values: true,
      record_delimiter: ['\r\n', '\n', '\r'],
    }) as unknown as { info: { lines: number }; record: string[] }[];
  } catch (e) {
    if (e instanceof CsvError) {
      const line = (e as CsvError & { lines?: number }).lines;
      throw new ApiError(400, 'CSV_MALFORMED', `The file is not valid CSV near line ${line ?? '?'}: ${e.message}`, {
        line: line ?? null,
        reason: e.code,
      });
    }
    throw e;
  }
  // info.lines is the line a record ends on; its fields' own line breaks say where it began.
  const withLines = records.map(({ info, record }) => ({
    line: info.lines - record.reduce((n, f) => n + (f.match(NEWLINE)?.length ?? 0), 0),
    fields: record,
  }));
  // Data cells only: the header names columns, and no export neutralises it.
  for (const l of withLines.slice(1)) l.fields = l.fields.map(restoreFormula);
  const [head, ...lines] = withLines;
  if (!head) throw new ApiError(400, 'CSV_HEADER_INVALID', 'The file is empty; its first line must be a header.', { line: 1 });
  return { header: head.fields, lines };
}

/**
 * An export: header and records as CSV text, with a UTF-8 BOM (spreadsheets
 * read it as UTF-8) and CRLF line ends; a cell a spreadsheet would run as a
 * formula is neutralised (neutraliseFormula).
 */
export function writeCsv(header: string[], records: unknown[][]): string {
  return stringify([header, ...records.map((r) => r.map((v) => (v === null || v === undefined ? '' : neutraliseFormula(String(v)))))], {
    bom: true,
    record_delimiter: 'windows',
    // csv-stringify quotes a field holding the record delimiter (CRLF), but a lone carriage
    // return or line feed is a line end too, to csv-parse (the import) and to spreadsheets.
    quoted_match: /[\r\n]/,
  });
}

/** A file name from a page name: letters, digits, - and _ only. */
export function csvFilename(name: string): string {
  const base = name
    .normalize('NFKD')
    .replace(/[^A-Za-z0-9_-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 80)
    .toLowerCase();
  return `${base || 'workbench'}.csv`;
}
