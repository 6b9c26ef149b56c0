"""Page helpers: what one page of the book needs to draw its tables, figures and explorers, kept apart from the
models (``x4lib/<part>/<module>.py``) so a reader knows which code is the model and which is the page. One module per
page, named after it: ``ch00`` (book/00-motivation.md), ``lab00`` (book/lab-00-roofline.md), ``lab01``
(book/lab-01-collectives.md); a long page's helpers are split by section (``ch01_memory``, ``lab00_model``). A page
calls ``from x4lib.pages import lab00 as page``. Page helpers are an edge: they turn the ids a page names into catalog
objects once and hand objects to the models.
"""
