// ipywidgets' controls typeset labels with the MathJax 2 API (MathJax.Hub.Queue) whenever window.MathJax exists
// (jupyter-widgets/ipywidgets#3829); the book loads MathJax 3, which has no Hub. Map the call onto MathJax 3.
(function () {
  const mj = window.MathJax;
  if (!mj || mj.Hub || !mj.startup) return;
  mj.Hub = {Queue: function (job) {
    const el = Array.isArray(job) ? job[2] : null;
    if (el && mj.typesetPromise) mj.startup.promise.then(() => mj.typesetPromise([el]));
  }};
})();
