// Draws the picture with WebGL2: its bytes go straight into an R8 texture (no RGBA expansion on
// the CPU), only the rows that changed are uploaded, and the fragment shader reads row y from
// slot (top + y) mod height, so a scroll moves a uniform instead of texels. A colour picture is
// three planes stacked (G, R − G, B − G): the shader reads row y of each and adds G back.

import type { Picture } from "../common/picture";

const VS = `#version 300 es
void main() {
  // One triangle that covers the viewport.
  vec2 p = vec2(float((gl_VertexID << 1) & 2), float(gl_VertexID & 2));
  gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);
}`;

const FS = `#version 300 es
precision highp float;
precision highp int;
uniform sampler2D grey;
uniform int top;
uniform int height;
uniform int planes;
out vec4 colour;
int at(int x, int row) {
  return int(texelFetch(grey, ivec2(x, (row + top) % height), 0).r * 255.0 + 0.5);
}
void main() {
  ivec2 p = ivec2(gl_FragCoord.xy);
  int h = height / planes;
  int y = h - 1 - p.y;
  int g = at(p.x, y);
  if (planes == 1) {
    colour = vec4(vec3(float(g) / 255.0), 1.0);
  } else {
    int r = (at(p.x, y + h) + g) & 255;
    int b = (at(p.x, y + 2 * h) + g) & 255;
    colour = vec4(float(r), float(g), float(b), 255.0) / 255.0;
  }
}`;

export class RenderError extends Error {}

function compile(gl: WebGL2RenderingContext, type: number, src: string): WebGLShader {
  const s = gl.createShader(type);
  if (!s) throw new RenderError("WebGL: cannot create a shader");
  gl.shaderSource(s, src);
  gl.compileShader(s);
  if (!gl.getShaderParameter(s, gl.COMPILE_STATUS)) throw new RenderError(`WebGL shader: ${gl.getShaderInfoLog(s) ?? "?"}`);
  return s;
}

export class Renderer {
  private readonly gl: WebGL2RenderingContext;
  private tex: WebGLTexture;
  private readonly uTop: WebGLUniformLocation | null;
  private readonly uHeight: WebGLUniformLocation | null;
  private readonly uPlanes: WebGLUniformLocation | null;
  private w = 0;
  private h = 0;
  private planes = 1;

  constructor(private readonly canvas: HTMLCanvasElement) {
    const gl = canvas.getContext("webgl2", { antialias: false, depth: false, stencil: false, alpha: false, preserveDrawingBuffer: false });
    if (!gl) throw new RenderError("this browser has no WebGL2; framewire's viewer needs it");
    this.gl = gl;
    const prog = gl.createProgram();
    if (!prog) throw new RenderError("WebGL: cannot create a program");
    gl.attachShader(prog, compile(gl, gl.VERTEX_SHADER, VS));
    gl.attachShader(prog, compile(gl, gl.FRAGMENT_SHADER, FS));
    gl.linkProgram(prog);
    if (!gl.getProgramParameter(prog, gl.LINK_STATUS)) throw new RenderError(`WebGL link: ${gl.getProgramInfoLog(prog) ?? "?"}`);
    gl.useProgram(prog);
    this.uTop = gl.getUniformLocation(prog, "top");
    this.uHeight = gl.getUniformLocation(prog, "height");
    this.uPlanes = gl.getUniformLocation(prog, "planes");
    gl.uniform1i(gl.getUniformLocation(prog, "grey"), 0);
    const tex = gl.createTexture();
    if (!tex) throw new RenderError("WebGL: cannot create a texture");
    this.tex = tex;
    gl.bindVertexArray(gl.createVertexArray());
    gl.pixelStorei(gl.UNPACK_ALIGNMENT, 1);
    gl.pixelStorei(gl.PACK_ALIGNMENT, 1);
  }

  /** A texture of w × h (all planes), a canvas of w × h / planes. */
  private resize(w: number, h: number, planes: number): void {
    const gl = this.gl;
    this.w = w;
    this.h = h;
    this.planes = planes;
    this.canvas.width = w;
    this.canvas.height = h / planes;
    gl.viewport(0, 0, w, h / planes);
    gl.uniform1i(this.uPlanes, planes);
    gl.activeTexture(gl.TEXTURE0);
    gl.bindTexture(gl.TEXTURE_2D, this.tex);
    gl.texStorage2D(gl.TEXTURE_2D, 1, gl.R8, w, h);
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MIN_FILTER, gl.NEAREST);
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MAG_FILTER, gl.NEAREST);
    gl.uniform1i(this.uHeight, h);
  }

  /** Uploads the slots that changed (in runs of adjacent slots) and draws. */
  draw(p: Picture, planes = 1): void {
    const gl = this.gl;
    if (p.width !== this.w || p.height !== this.h || planes !== this.planes) {
      // texStorage2D is immutable: a new size needs a new texture object's storage.
      if (this.w !== 0) {
        gl.deleteTexture(this.tex);
        const t = gl.createTexture();
        if (!t) throw new RenderError("WebGL: cannot create a texture");
        this.tex = t;
      }
      this.resize(p.width, p.height, planes);
      p.allDirty = true;
    }
    const w = p.width;
    if (p.allDirty) {
      gl.texSubImage2D(gl.TEXTURE_2D, 0, 0, 0, w, p.height, gl.RED, gl.UNSIGNED_BYTE, p.data);
      p.dirty.fill(0);
      p.allDirty = false;
    } else {
      const d = p.dirty;
      for (let s = 0; s < p.height; ) {
        if (d[s] === 0) {
          s++;
          continue;
        }
        let e = s;
        while (e < p.height && d[e] === 1) d[e++] = 0;
        gl.texSubImage2D(gl.TEXTURE_2D, 0, 0, s, w, e - s, gl.RED, gl.UNSIGNED_BYTE, p.data.subarray(s * w, e * w));
        s = e;
      }
    }
    gl.uniform1i(this.uTop, p.top);
    gl.drawArrays(gl.TRIANGLES, 0, 3);
    gl.flush();
  }

  /** The tallest texture this GPU takes (a colour picture needs three times its height). */
  maxTextureSize(): number {
    return this.gl.getParameter(this.gl.MAX_TEXTURE_SIZE) as number;
  }

  /** Waits for the GPU (used when the page measures its own draw time). */
  finish(): void {
    this.gl.finish();
  }

  /**
   * The drawn picture read back from the canvas, top row first: grey, one byte a pixel (the R
   * channel); colour, R G B. Call right after draw(), in the same task, while the drawing
   * buffer still holds the frame.
   */
  readback(): Uint8Array {
    const gl = this.gl;
    const w = this.w;
    const h = this.h / this.planes;
    const n = this.planes === 1 ? 1 : 3;
    const rgba = new Uint8Array(w * h * 4);
    gl.readPixels(0, 0, w, h, gl.RGBA, gl.UNSIGNED_BYTE, rgba);
    const out = new Uint8Array(w * h * n);
    for (let y = 0; y < h; y++) {
      const src = (h - 1 - y) * w * 4;
      const dst = y * w * n;
      for (let x = 0; x < w; x++) for (let c = 0; c < n; c++) out[dst + x * n + c] = rgba[src + x * 4 + c]!;
    }
    return out;
  }
}
