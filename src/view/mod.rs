//! The lane view-model every front end draws from, with no drawing library: which rows
//! a trace shows and in what order ([`rows`]), the render index that answers a frame's
//! cells in O(cells) ([`index`], [`pyramid`]), the time axis and its cell edges
//! ([`viewport`]), where two runs sit on one axis ([`align`]) and what an event looks
//! like as data ([`palette`]), and each step's budget as a row ([`steps`]). The viewer
//! (`tui`) draws it in a terminal; `picture` draws it as SVG for `snapshot`,
//! `report --format html` and `diff --format html`.

pub(crate) mod align;
pub(crate) mod index;
pub(crate) mod palette;
pub(crate) mod pyramid;
pub(crate) mod rows;
pub(crate) mod steps;
pub(crate) mod viewport;
