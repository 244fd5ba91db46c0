// brick_gym 3D viewer: shows the GLB a page carries (window.BRICK_GLB[name], base64) in every element with a
// data-model attribute, with three.js 0.187 (window.BRICK_THREE, written by brick_gym/bench/report/viewer.py).
// A classic script, so that the page works from disk: Chromium refuses ES modules fetched from file://, so the
// vendored modules are linked here as blob URLs, each import specifier rewritten to its module's blob URL.
// The element's data-state says how it went: loading, ready, no-webgl or error (with the message shown).
(function () {
  "use strict";

  var VIEWS = {
    front_right: [45, 30], back_right: [135, 30], back_left: [225, 30], front_left: [315, 30],
    front: [0, 0], right: [90, 0], back: [180, 0], left: [270, 0]
  };
  var FIELD_OF_VIEW = 30, FRAME_FILL = 0.8;

  function linkModules() {
    var bundle = window.BRICK_THREE;
    if (!bundle) { return Promise.reject(new Error("three.js modules missing (assets/three-modules.js)")); }
    var urls = {};
    bundle.modules.forEach(function (m) {
      var source = m.source;
      Object.keys(m.imports).forEach(function (spec) {
        var url = urls[m.imports[spec]];
        ["'", '"'].forEach(function (q) { source = source.split("from " + q + spec + q).join("from '" + url + "'"); });
      });
      urls[m.name] = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
    });
    var names = ["three.module.js", "OrbitControls.js", "GLTFLoader.js"];
    return Promise.all(names.map(function (n) { return import(urls[n]); })).then(function (mods) {
      return { THREE: mods[0], OrbitControls: mods[1].OrbitControls, GLTFLoader: mods[2].GLTFLoader };
    });
  }

  function decode(base64) {
    var text = atob(base64), bytes = new Uint8Array(text.length);
    for (var i = 0; i < text.length; i++) { bytes[i] = text.charCodeAt(i); }
    return bytes.buffer;
  }

  function fail(el, message) {
    el.dataset.state = message.indexOf("WebGL") === 0 ? "no-webgl" : "error";
    var note = document.createElement("p");
    note.className = "viewer-note";
    note.textContent = message;
    el.appendChild(note);
  }

  function hasWebGL() {
    try { return !!document.createElement("canvas").getContext("webgl2"); } catch (e) { return false; }
  }

  function show(el, lib) {
    var THREE = lib.THREE;
    var data = (window.BRICK_GLB || {})[el.dataset.model];
    if (!data) { fail(el, "no model data for this viewer"); return Promise.resolve(); }
    if (!hasWebGL()) { fail(el, "WebGL is not available in this browser: the 3D view cannot be shown."); return Promise.resolve(); }
    return new lib.GLTFLoader().parseAsync(decode(data), "").then(function (gltf) {
      var renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
      renderer.setPixelRatio(window.devicePixelRatio || 1);
      var canvas = renderer.domElement;
      el.insertBefore(canvas, el.firstChild);
      var scene = new THREE.Scene();
      scene.background = new THREE.Color(0xffffff);
      var model = gltf.scene;
      var edges = {};
      model.traverse(function (node) {
        if (!node.isMesh) { return; }
        var key = node.geometry.uuid;
        if (!edges[key]) { edges[key] = new THREE.EdgesGeometry(node.geometry, 40); }
        var c = node.material.color, dark = Math.max(c.r, c.g, c.b) < 0.05;
        var line = new THREE.LineSegments(edges[key], new THREE.LineBasicMaterial({ color: dark ? 0x777777 : 0x333333 }));
        node.add(line);
      });
      scene.add(model);
      scene.add(new THREE.HemisphereLight(0xffffff, 0x8a8a8a, 1.6));
      var camera = new THREE.PerspectiveCamera(FIELD_OF_VIEW, 1, 1, 1e6);
      var key = new THREE.DirectionalLight(0xffffff, 2.2);
      key.position.set(-0.45, 0.75, 0.5);
      camera.add(key);
      scene.add(camera);
      var sphere = new THREE.Box3().setFromObject(model).getBoundingSphere(new THREE.Sphere());
      var radius = Math.max(sphere.radius, 1);
      var distance = radius / Math.sin(Math.atan(FRAME_FILL * Math.tan(THREE.MathUtils.degToRad(FIELD_OF_VIEW / 2))));
      camera.near = Math.max(distance - 4 * radius, distance / 1000);
      camera.far = distance + 4 * radius;
      var controls = new lib.OrbitControls(camera, canvas);
      controls.target.copy(sphere.center);
      function draw() { renderer.render(scene, camera); }
      function look(name) {
        var a = VIEWS[name] || VIEWS.front_right;
        var az = THREE.MathUtils.degToRad(a[0]), elv = THREE.MathUtils.degToRad(a[1]);
        camera.position.set(Math.sin(az) * Math.cos(elv), Math.sin(elv), Math.cos(az) * Math.cos(elv));
        camera.position.multiplyScalar(distance).add(sphere.center);
        camera.lookAt(sphere.center);
        controls.update();
        draw();
      }
      function resize() {
        var w = Math.max(el.clientWidth, 1), h = Math.max(el.clientHeight, 1);
        renderer.setSize(w, h, false);
        canvas.style.width = "100%";
        canvas.style.height = "100%";
        camera.aspect = w / h;
        camera.updateProjectionMatrix();
        draw();
      }
      controls.addEventListener("change", draw);
      if (window.ResizeObserver) { new ResizeObserver(resize).observe(el); }
      var picker = el.parentNode.querySelector("select.viewer-views");
      if (picker) { picker.addEventListener("change", function () { look(picker.value); }); }
      resize();
      look("front_right");
      el.dataset.state = "ready";
    });
  }

  function start() {
    var els = Array.prototype.slice.call(document.querySelectorAll("[data-model]"));
    if (!els.length) { return; }
    els.forEach(function (el) { el.dataset.state = "loading"; });
    linkModules().then(function (lib) {
      return Promise.all(els.map(function (el) {
        return show(el, lib).catch(function (err) { fail(el, "could not show the model: " + err.message); });
      }));
    }).catch(function (err) {
      els.forEach(function (el) { fail(el, "could not load three.js: " + err.message); });
    });
  }

  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", start); } else { start(); }
})();
