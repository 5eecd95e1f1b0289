// racelab's loader for host pages: one <script src="https://racelab.example/embed.js" async>.
//
// It does three things, for every racelab embed on the page, whenever it was added:
//  1. <racelab-scenario scenario="isolation/write-skew" variant="…" theme="…" view="…"
//     mode="…" autoplay="…" postgres="…"> becomes an iframe of that embed (the element keeps
//     its place); <racelab-scenario src="ws.racelab.json" live="…"> one of the recording
//     player, which fetches the file (resolved against the host page) and plays it;
//  2. every racelab iframe (the element's, or one pasted as an <iframe>) takes the height its
//     page reports, so the finished run is never cut off behind a scrollbar;
//  3. an embed with theme=host is told the host's colours where it sits (light or dark text,
//     and the colour scheme that keeps its background transparent), since it cannot read them.
// The older one-tag form, <script src=…/embed.js data-scenario=…>, becomes an element after
// the script. Nothing here touches the host page's styles or needs a cookie.
(function () {
  var script = document.currentScript;
  var here = script ? script.src : location.href;
  var origin = new URL(here).origin;
  var OPTIONS = ["variant", "mode", "theme", "autoplay", "view", "postgres", "live"];
  // The recording player, beside this script: racelab's own page on a racelab server; the
  // exported player.html on a static host (`racelab export --player` writes this line).
  var PLAYER = "/embed/recording";
  var player = new URL(PLAYER, here).href;

  // Whether `frame` shows a racelab embed of this server (or this export's player).
  function isEmbed(frame) {
    var src = frame.getAttribute("src") || "";
    return src.indexOf(origin + "/embed/") === 0 || src.indexOf(player + "?") === 0;
  }

  // `color` (any CSS colour the browser computes: rgb(), oklch(), color(srgb …)) as
  // [r, g, b, a] in 0–255, drawn on a 1×1 canvas so the browser converts it.
  var canvas;
  function rgba(color) {
    canvas = canvas || document.createElement("canvas");
    canvas.width = canvas.height = 1;
    var context = canvas.getContext("2d", { willReadFrequently: true });
    if (!context) return [255, 255, 255, 0];
    context.clearRect(0, 0, 1, 1);
    context.fillStyle = color;
    context.fillRect(0, 0, 1, 1);
    return context.getImageData(0, 0, 1, 1).data;
  }

  // Light or dark, as the host paints the place where `element` sits: the first ancestor with a
  // background colour of its own decides (a page with none is white).
  function hostLooksDark(element) {
    for (var node = element.parentElement; node; node = node.parentElement) {
      var c = rgba(getComputedStyle(node).backgroundColor);
      if (c[3] > 127) return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2] < 128;
    }
    return false;
  }

  // The colour scheme the browser uses for `frame` in the host: the embed uses the same one,
  // or the browser would paint an opaque backdrop behind its transparent page.
  function schemeOf(frame) {
    var scheme = getComputedStyle(frame).colorScheme || "normal";
    var dark = scheme.indexOf("dark") >= 0;
    var light = scheme.indexOf("light") >= 0;
    var prefersDark = window.matchMedia && matchMedia("(prefers-color-scheme: dark)").matches;
    return dark && (!light || prefersDark) ? "dark" : "light";
  }

  if (!window.customElements.get("racelab-scenario")) {
    class RacelabScenario extends HTMLElement {
      static get observedAttributes() { return ["scenario", "spec", "src"].concat(OPTIONS); }
      connectedCallback() { this.render(); }
      attributeChangedCallback() { if (this.isConnected) this.render(); }
      render() {
        // A reader's saved spec (spec="<id>") embeds at /embed/s/<id>; a recording (src=…)
        // plays in the player, which needs no racelab server.
        var spec = this.getAttribute("spec");
        var recording = this.getAttribute("src");
        var scenario = spec ? "s/" + spec : this.getAttribute("scenario");
        if (!scenario && !recording) return;
        var query = new URLSearchParams();
        if (recording) query.set("src", new URL(recording, document.baseURI).href);
        var element = this;
        OPTIONS.forEach(function (name) {
          if (!element.hasAttribute(name)) return;
          var value = element.getAttribute(name);
          // `autoplay` is a boolean attribute (present, even empty, means on) or `visible`.
          if (name === "autoplay" && (value === "" || value === "autoplay")) value = "1";
          query.set(name, value);
        });
        var src = (recording ? player : origin + "/embed/" + scenario) + "?" + query.toString();
        if (!this.frame) {
          this.frame = document.createElement("iframe");
          this.frame.loading = "lazy";
          this.frame.style.cssText = "display:block;width:100%;min-height:240px;border:0";
          this.style.display = "block";
          this.appendChild(this.frame);
        }
        if (this.frame.getAttribute("src") !== src) {
          this.frame.setAttribute("src", src);
          this.frame.title = "racelab: " + (recording ? "a recording" : scenario);
        }
      }
    }
    window.customElements.define("racelab-scenario", RacelabScenario);

    // One listener for every embed: each height goes to its own iframe only, found by the
    // window that sent it.
    window.addEventListener("message", function (event) {
      var data = event.data;
      if (event.origin !== origin || !data || data.type !== "racelab:height" || !(data.height > 0)) return;
      var frames = document.getElementsByTagName("iframe");
      for (var i = 0; i < frames.length; i++) {
        var frame = frames[i];
        if (frame.contentWindow !== event.source || !isEmbed(frame)) continue;
        frame.style.height = Math.ceil(data.height) + "px";
        if (/[?&]theme=host(&|$)/.test(frame.getAttribute("src"))) {
          event.source.postMessage(
            { type: "racelab:host", dark: hostLooksDark(frame), scheme: schemeOf(frame) },
            origin
          );
        }
      }
    });
  }

  if (script && script.dataset.scenario) {
    var element = document.createElement("racelab-scenario");
    element.setAttribute("scenario", script.dataset.scenario);
    OPTIONS.forEach(function (name) {
      if (script.dataset[name]) element.setAttribute(name, script.dataset[name]);
    });
    script.parentNode.insertBefore(element, script.nextSibling);
  }
})();
