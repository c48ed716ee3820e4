// Bytes → text for trace files: plain JSON or gzip (by magic number, whatever the name says).
export async function bytesToText(buf: ArrayBuffer): Promise<string> {
  const head = new Uint8Array(buf, 0, Math.min(2, buf.byteLength));
  if (head[0] === 0x1f && head[1] === 0x8b) {
    const stream = new Blob([buf]).stream().pipeThrough(new DecompressionStream('gzip'));
    return await new Response(stream).text();
  }
  return new TextDecoder().decode(buf);
}

export async function readLocalFile(f: File): Promise<string> {
  return bytesToText(await f.arrayBuffer());
}
