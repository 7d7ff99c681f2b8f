"""The What-if page: the page (``page``), its tabs (``editor``, ``admit``,
``provision``, ``plans``), the baseline line and live apply above them, and their
views (``scenario``, ``planning``, ``link``, ``live``, ``optimizer``)."""
