// A one-line progress bar for long runs on a terminal: done / total, rate and time left (stderr, redrawn).
const WIDTH = 30;

export function progressBar(name: string, stream: NodeJS.WriteStream = process.stderr) {
  const started = Date.now();
  let total = 0;
  let lastDraw = 0;
  return {
    /** `left`: what is still to do; the total is the largest done + left seen. */
    update(left: number, done?: number): void {
      const finished = done ?? Math.max(0, total - left);
      total = Math.max(total, finished + left);
      const now = Date.now();
      if (now - lastDraw < 250 && left > 0) return;
      lastDraw = now;
      const seconds = Math.max(0.001, (now - started) / 1_000);
      const rate = finished / seconds;
      const share = total === 0 ? 1 : finished / total;
      const bar = '#'.repeat(Math.round(share * WIDTH)).padEnd(WIDTH, '-');
      const eta = rate > 0 ? Math.ceil(left / rate) : undefined;
      const line = `${name} [${bar}] ${Math.floor(share * 100)}% ${finished.toLocaleString('en-US')}/${total.toLocaleString('en-US')} messages, ${Math.round(rate).toLocaleString('en-US')}/s, ${eta === undefined ? '?' : eta} s left`;
      stream.write(stream.isTTY ? `\r${line}\u001b[K` : `${line}\n`);
      if (left === 0 && stream.isTTY) stream.write('\n');
    },
  };
}
