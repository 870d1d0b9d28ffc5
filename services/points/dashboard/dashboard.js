// The operators' dashboard: reads Points' public routes and its two dashboard routes every few seconds.
// Text only goes in through textContent (subjects and rules come from the chain).
'use strict';

const REFRESH_MS = 3000;
const COLORS = {
  normal: '#2e9d5b',
  'case 1': '#e8a33d',
  'case 2': '#d9642b',
  'case 3': '#8e44ad',
  'case 4': '#c0392b',
  'case 5': '#2471a3',
  'case 6': '#6c3483',
  'case 7': '#a04000',
  'case 0': '#95a5a6',
  invalid_complaint: '#95a5a6',
  unknown: '#7f8c8d',
};

async function getJson(path) {
  const response = await fetch(path);
  const body = await response.json();
  if (!response.ok) throw new Error(body.message || `HTTP ${response.status}`);
  return body;
}

function el(tag, text, attrs) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  return node;
}

function row(cells) {
  const tr = document.createElement('tr');
  for (const cell of cells) {
    const td = document.createElement('td');
    if (cell instanceof Node) td.appendChild(cell);
    else td.textContent = cell === undefined || cell === null ? '—' : String(cell);
    tr.appendChild(td);
  }
  return tr;
}

function fill(tableId, rows) {
  const body = document.querySelector(`#${tableId} tbody`);
  body.replaceChildren(...rows);
}

const time = (seconds) => new Date(seconds * 1000).toISOString().replace('T', ' ').slice(0, 19);

// Pipeline health: heights and lag per chain, consumers' lag and deliveries per group, commands by status.
async function refreshPipeline() {
  const health = await getJson('/dashboard/pipeline');
  fill(
    'chains',
    health.chains.map((c) => row([c.chain, c.chain_client_height, c.connector_height, c.lag_blocks])),
  );
  fill(
    'consumers',
    health.consumers.map((c) => row([c.group, c.lag, c.handled, c.deadLettered])),
  );
  fill(
    'commands',
    Object.entries(health.commands).map(([service, byStatus]) =>
      row([
        service,
        Object.entries(byStatus)
          .filter(([, n]) => n > 0)
          .map(([status, n]) => `${status}: ${n}`)
          .join(', ') || 'none',
      ]),
    ),
  );
}

let verdictChart;
async function refreshVerdicts() {
  const data = await getJson('/dashboard/verdicts');
  const labels = data.buckets.map(time);
  const datasets = Object.keys(data.series)
    .sort()
    .map((kind) => ({ label: kind, data: data.series[kind], backgroundColor: COLORS[kind] || '#999' }));
  if (!verdictChart) {
    verdictChart = new Chart(document.getElementById('verdicts-chart'), {
      type: 'bar',
      data: { labels, datasets },
      options: {
        animation: false,
        maintainAspectRatio: false,
        scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true, ticks: { precision: 0 } } },
      },
    });
  } else {
    verdictChart.data.labels = labels;
    verdictChart.data.datasets = datasets;
    verdictChart.update();
  }
  document.getElementById('verdicts-total').textContent =
    `${data.total} verdicts; buckets of ${data.bucket_seconds} s of block time`;
}

async function refreshRanking() {
  const ranking = await getJson('/lp-ranking');
  fill(
    'ranking',
    ranking.lps.map((lp) => {
      const link = el('a', lp.lp_id, { 'data-lp': lp.lp_id });
      // An LP id may look like an address: the ranking says it is an LP, so the lookup does not guess.
      link.addEventListener('click', () => lookup(lp.lp_id, 'lp'));
      const score = el('span', lp.score, lp.score_tenths < lp.basis_tenths ? { class: 'below' } : {});
      return row([
        lp.rank,
        link,
        score,
        (lp.basis_tenths / 10).toFixed(1),
        lp.statistics.decided_swaps,
        `${lp.statistics.success_rate_percent} %`,
        lp.statistics.average_response_seconds === null ? '—' : `${lp.statistics.average_response_seconds} s`,
        lp.violations,
      ]);
    }),
  );
}

// Lookup: the score now, its history (the score as of each deduction), and the deduction records. `kind`:
// 'user' or 'lp'; without it, an address is taken as a user and anything else as an LP id.
let historyChart;
async function lookup(subject, kind) {
  document.getElementById('subject').value = subject;
  document.getElementById('kind').value = kind ?? '';
  const error = document.getElementById('lookup-error');
  error.hidden = true;
  try {
    const isUser = kind ? kind === 'user' : /^0x[0-9a-fA-F]{40}$/.test(subject);
    const key = isUser ? `address=${encodeURIComponent(subject)}` : `lp_id=${encodeURIComponent(subject)}`;
    // Everything first, then shown at once: the summary never stands above the previous subject's records.
    // The history is one request: the score as of each deduction's time, computed by Points.
    const [point, records, history] = await Promise.all([
      getJson(isUser ? `/user-point?${key}` : `/lp-point?${key}`),
      getJson(isUser ? `/user-deduction-records?${key}&limit=100` : `/lp-deduction-records?${key}&limit=100`),
      getJson(`/dashboard/score-history?${key}`),
    ]);
    document.getElementById('summary').textContent =
      `${isUser ? 'User' : 'LP'} ${subject}: score ${point.score} (basis ${point.basis.points}: ${point.basis.reason}; ` +
      `${point.deductions ? point.deductions.violations : records.records.length} violations in the window)`;
    const points = [
      ...history.points.map((h) => ({ x: time(h.at), y: h.score_tenths / 10 })),
      { x: 'now', y: point.score_tenths / 10 },
    ];
    if (historyChart) historyChart.destroy();
    historyChart = new Chart(document.getElementById('history-chart'), {
      type: 'line',
      data: {
        labels: points.map((p) => p.x),
        datasets: [{ label: 'score', data: points.map((p) => p.y), borderColor: '#2456c7', stepped: true }],
      },
      options: { animation: false, maintainAspectRatio: false, scales: { y: { beginAtZero: true } } },
    });
    fill(
      'records',
      records.records.map((r) => {
        const txs = document.createElement('span');
        for (const tx of r.transactions || []) {
          const code = el(
            'code',
            `${tx.step} ${tx.chain_id ?? tx.chain ?? ''} ${String(tx.tx_hash ?? tx.txHash ?? '').slice(0, 10)}…`,
            {
              title: String(tx.tx_hash ?? tx.txHash ?? ''),
            },
          );
          txs.append(code, document.createElement('br'));
        }
        const swap = el('a', 'verdict', {
          href: `/complaint?bid=${encodeURIComponent(r.bid_id ?? r.bid)}`,
          target: '_blank',
        });
        return row([time(r.block_time), r.case, r.rule, (r.tenths / 10).toFixed(1), txs, swap]);
      }),
    );
    document.getElementById('result').hidden = false;
  } catch (err) {
    error.textContent = `lookup failed: ${err.message}`;
    error.hidden = false;
  }
}

document.getElementById('lookup').addEventListener('submit', (event) => {
  event.preventDefault();
  lookup(document.getElementById('subject').value.trim(), document.getElementById('kind').value || undefined);
});

async function refresh() {
  const results = await Promise.allSettled([refreshPipeline(), refreshVerdicts(), refreshRanking()]);
  const failed = results.filter((r) => r.status === 'rejected');
  document.getElementById('updated').textContent = failed.length
    ? `update failed: ${failed[0].reason.message}`
    : `updated ${new Date().toLocaleTimeString()}`;
}

// ?lookup=<address or LP id>[&kind=user|lp]
const query = new URLSearchParams(location.search);
const initial = query.get('lookup');
if (initial) lookup(initial, ['user', 'lp'].includes(query.get('kind')) ? query.get('kind') : undefined);
refresh();
setInterval(refresh, REFRESH_MS);
