// Making elements without markup: every child string becomes a text node, attributes are
// set with setAttribute (never an event handler: listeners are added in code).

const SVG = "http://www.w3.org/2000/svg";

function fill(node, attrs, children) {
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) throw new Error(`no inline handlers: ${k}`);
    node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) {
    if (c === null || c === undefined || c === false || c === "") continue;
    node.append(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
  }
  return node;
}

/** An HTML element: el("div", { class: "x" }, "text", otherNode). */
export function el(tag, attrs, ...children) {
  return fill(document.createElement(tag), attrs, children);
}

/** An SVG element (createElementNS). */
export function svg(tag, attrs, ...children) {
  return fill(document.createElementNS(SVG, tag), attrs, children);
}

/** Replace the children of `node`. */
export function replace(node, ...children) {
  node.replaceChildren();
  return fill(node, null, children);
}

export function byId(id) {
  return document.getElementById(id);
}
