//! One declaration per parameter: `declare_params!` turns one annotated struct into the
//! method's parameter struct, its schema, the typed `build` from a resolved [`ParamMap`] and the
//! inverse `params()`; [`Checked`] marks an instance whose parameters have passed the schema.
//!
//! # Declaring a method's parameters
//!
//! Every field carries the expression that declares it, written with the schema helpers of
//! [`crate::api::info`] (`int`, `float`, `float_in`, `positive`, `choice`, `auto`, `dim`, ...):
//!
//! ```ignore
//! declare_params! {
//!     /// MPME with parameters `dim`, `lambda`, `C`, `max_iter`, `tol`, `solver`, `embedding`.
//!     #[derive(Debug, Clone)]
//!     pub struct Mpme {
//!         /// Target dimension d (also the factor `d/2` of the log-det term).
//!         pub dim: usize = dim(),
//!         /// Slack penalty `C > 0` (bounds `0 <= w_ij <= 4C`); `f64::INFINITY` for no upper bound.
//!         pub c: f64 = float_in("C", open(0.0), closed(f64::INFINITY), f64::INFINITY, "slack penalty C: ..."),
//!         /// Bound-constrained solver of the dual.
//!         pub solver: Solver = choice("solver", SOLVER_NAMES, DEFAULT_SOLVER, SOLVER_DOC),
//!         /// Embedding step.
//!         pub embedding: MpmeEmbedding = choice("embedding", MpmeEmbedding::NAMES, "kpca", "kpca: ..."),
//!         ...
//!     }
//! }
//! ```
//!
//! (`MpmeEmbedding` is declared with `param_choice!`, which pairs every variant with the option
//! naming it and lists the options as `MpmeEmbedding::NAMES`; a foreign or irregular enum
//! implements [`ParamChoice`] by hand.)
//!
//! From that one item the macro generates
//!
//! - the struct, with the fields' doc comments and attributes (the expressions removed);
//! - [`Declared::schema`]: the [`ParamSchema`]s in declaration order, exactly what the helper
//!   expressions return (so the schema, `docs/methods.md` and every record key are what they were
//!   when each method wrote its schema by hand);
//! - [`Declared::from_map`] (the registry's `build`, through [`build`]): every value is checked
//!   against its schema ([`ParamSchema::check`]) and converted to the field's type
//!   ([`ParamType`]: `usize` for integers and dimensions, `f64`, `bool`, `Option<T>` for `auto`,
//!   any [`ParamChoice`] enum for a choice);
//! - [`Declared::to_params`], the inverse (what [`crate::api::Embedder::params`] returns):
//!   every fit-stage parameter under its schema name;
//! - [`Default`] (single-entry structs): the schema's defaults, so a default never has to be
//!   written twice.
//!
//! A field's schema name may differ from its name (`c` is `"C"`): the name is the helper's first
//! argument. Besides a schema, a field's expression may be
//!
//! - [`fixed`]`(value)`: not a parameter (a Rust-only knob, or fixed by the registry entry); `build`
//!   gives the field this value and `params()` leaves it out;
//! - [`coded`]`(schema, from, to)`: a parameter whose field type needs its own conversion (e.g. a
//!   count where 0 means `auto`).
//!
//! `_ = schema,` declares a parameter the struct does not hold: an evaluation-stage parameter (the
//! runner reads it, `params()` leaves it out: FSL's
//! `_ = int("n_selected", 0, 0, "...").evaluation_stage(),`), or a fit-stage one with a single
//! admissible value, which `params()` reports at its default (DDRTree's `init`).
//!
//! One struct may serve several registry entries (e.g. `Mvu` for `mvu`, `mvu-ineq` and `mvu2`,
//! which differ in one parameter). The first line then names the entry and how an instance tells
//! which entry it is:
//!
//! ```ignore
//! declare_params! {
//!     entry variant: MvuVariant = |m| m.variant;
//!     pub struct Mvu {
//!         pub variant: MvuVariant = fixed(variant),
//!         pub nu: f64 = if variant == MvuVariant::L2 { float_in("nu", ...).into() } else { fixed(0.0) },
//!         ...
//!     }
//! }
//! ```
//!
//! and every expression may use `variant` (a per-entry default, doc, or presence).
//!
//! Adding a parameter is one line: the field with its schema expression. Nothing else names it.
//!
//! # Checked parameters
//!
//! Following linfa's checked-parameter types, an instance reaches the numerics only after its
//! parameters have passed the schema, once:
//!
//! - the registry's `build` ([`build`]) checks every value while converting it (so even a map
//!   that did not come from `MethodInfo::resolve` cannot make an unchecked instance) and returns
//!   the instance wrapped in [`Checked`], whose inner value cannot be changed afterwards; its
//!   [`crate::api::Embedder::fit_with`] does not check again. So a cell's parameters are checked
//!   when the runner's `MethodInfo::instantiate` makes the instance (resolve, then build), and no
//!   longer again by every fit through a `params()` -> map round trip;
//! - [`Checked::new`] checks an instance made in Rust (a struct literal) once and gives the same
//!   wrapper;
//! - an unchecked instance (a struct literal used directly) is still checked by every
//!   [`crate::api::Embedder::fit_with`], as before, with the same error messages.
//!
//! (The inherent entry points some methods keep for Rust callers, `DdrTree::fit_with_init`,
//! `Rpg::fit_graph` and `Fsl::solve`, bypass `fit_with` and keep their own range checks.)
//!
//! # Why `macro_rules!`
//!
//! A declarative macro needs no proc-macro crate (no `syn`/`quote` to compile, no extra crate in
//! the workspace), and the schema types are plain data that the existing helper functions already
//! build: the macro only places each field's expression in the generated `schema`, `from_map` and
//! `to_params`, and the rest is ordinary generic code in this module. Field
//! types are tied to their kinds by the [`ParamType`] conversions; a mismatch (a `f64` field with an
//! integer kind, an enum missing a choice) fails the conformance test that builds every method
//! from every admissible sample value of every parameter and checks that `params()` returns the
//! resolved map.

use super::contract::{Embedder, FitInput, Fitted};
use super::params::{ParamError, ParamKind, ParamMap, ParamSchema, ParamValue, Stage, AUTO, DIM_UNRESOLVED};
use super::{MethodInfo, Result};

/// A Rust enum that is the type of a choice parameter ([`ParamKind::Choice`]): every option of the
/// schema names one value. Declare local enums with `param_choice!`.
pub trait ParamChoice: Sized {
    /// The value named `name`, if any.
    fn from_name(name: &str) -> Option<Self>;
    /// The option naming this value.
    fn name(&self) -> &'static str;
}

/// A field type that a parameter value converts to and from.
pub trait ParamType: Sized {
    /// The field value of a value the schema has accepted (in canonical form), or `None` if the
    /// value is not one of this type's (the declaration pairs the field with the wrong kind).
    fn from_value(v: &ParamValue) -> Option<Self>;
    /// The parameter value of a field value.
    fn to_value(&self) -> ParamValue;
}

impl ParamType for usize {
    fn from_value(v: &ParamValue) -> Option<usize> {
        match v {
            ParamValue::Int(i) => usize::try_from(*i).ok(),
            _ => None,
        }
    }
    fn to_value(&self) -> ParamValue {
        ParamValue::Int(*self as i64)
    }
}

impl ParamType for f64 {
    fn from_value(v: &ParamValue) -> Option<f64> {
        match v {
            ParamValue::Float(x) => Some(*x),
            _ => None,
        }
    }
    fn to_value(&self) -> ParamValue {
        ParamValue::Float(*self)
    }
}

impl ParamType for bool {
    fn from_value(v: &ParamValue) -> Option<bool> {
        match v {
            ParamValue::Bool(b) => Some(*b),
            _ => None,
        }
    }
    fn to_value(&self) -> ParamValue {
        ParamValue::Bool(*self)
    }
}

/// `auto` ([`ParamKind::Auto`]) is `None`.
impl<T: ParamType> ParamType for Option<T> {
    fn from_value(v: &ParamValue) -> Option<Option<T>> {
        match v {
            ParamValue::Str(s) if s == AUTO => Some(None),
            v => T::from_value(v).map(Some),
        }
    }
    fn to_value(&self) -> ParamValue {
        match self {
            None => ParamValue::Str(AUTO.into()),
            Some(t) => t.to_value(),
        }
    }
}

impl<T: ParamChoice> ParamType for T {
    fn from_value(v: &ParamValue) -> Option<T> {
        match v {
            ParamValue::Str(s) => T::from_name(s),
            _ => None,
        }
    }
    fn to_value(&self) -> ParamValue {
        ParamValue::Str(self.name().into())
    }
}

/// `disconnected` ([`crate::api::info::disconnected_param`]).
impl ParamChoice for structdr_numerics::graphs::Disconnected {
    fn from_name(name: &str) -> Option<Self> {
        Self::parse(name)
    }
    fn name(&self) -> &'static str {
        self.as_str()
    }
}

/// The bound-constrained solvers' `solver` parameter.
impl ParamChoice for structdr_numerics::optim::Solver {
    fn from_name(name: &str) -> Option<Self> {
        Self::from_name(name)
    }
    fn name(&self) -> &'static str {
        Self::name(*self)
    }
}

/// How one field is declared (for one registry entry): a parameter with its schema and the
/// conversions of its value, or a fixed value.
pub struct Decl<T>(DeclKind<T>);

enum DeclKind<T> {
    Param { schema: ParamSchema, from: fn(&ParamValue) -> Option<T>, to: fn(&T) -> ParamValue },
    Fixed(T),
}

/// A field that is not a parameter (in this entry): `build` sets it to `value`.
pub fn fixed<T>(value: T) -> Decl<T> {
    Decl(DeclKind::Fixed(value))
}

/// A parameter whose field converts with its own functions instead of [`ParamType`]'s.
pub fn coded<T>(schema: ParamSchema, from: fn(&ParamValue) -> Option<T>, to: fn(&T) -> ParamValue) -> Decl<T> {
    Decl(DeclKind::Param { schema, from, to })
}

impl<T: ParamType> From<ParamSchema> for Decl<T> {
    fn from(schema: ParamSchema) -> Decl<T> {
        coded(schema, T::from_value, T::to_value)
    }
}

/// What a field's declaring expression may be: a [`ParamSchema`] (the field's type converts
/// through [`ParamType`]) or a [`Decl`] ([`fixed`], [`coded`]).
pub trait IntoDecl<T> {
    /// The declaration.
    fn into_decl(self) -> Decl<T>;
}

impl<T: ParamType> IntoDecl<T> for ParamSchema {
    fn into_decl(self) -> Decl<T> {
        self.into()
    }
}

impl<T> IntoDecl<T> for Decl<T> {
    fn into_decl(self) -> Decl<T> {
        self
    }
}

impl<T> Decl<T> {
    /// The schema, for a parameter.
    pub fn into_schema(self) -> Option<ParamSchema> {
        match self.0 {
            DeclKind::Param { schema, .. } => Some(schema),
            DeclKind::Fixed(_) => None,
        }
    }

    /// The field's value from `p`: the parameter's value, checked against its schema and
    /// converted, or the fixed value.
    pub fn extract(self, method: &str, p: &ParamMap) -> std::result::Result<T, ParamError> {
        match self.0 {
            DeclKind::Fixed(v) => Ok(v),
            DeclKind::Param { schema, from, .. } => {
                let v = checked_value(method, &schema, p)?;
                from(&v).ok_or_else(|| ParamError::Invalid {
                    method: method.into(),
                    name: schema.name.into(),
                    expected: if schema.kind == ParamKind::Dim { DIM_UNRESOLVED.into() } else { schema.kind.to_string() },
                    got: v.to_string(),
                })
            }
        }
    }

    /// `(name, value)` of a fit-stage parameter holding `field`; `None` for a fixed field or an
    /// evaluation-stage parameter.
    pub fn param_of(self, field: &T) -> Option<(String, ParamValue)> {
        match self.0 {
            DeclKind::Param { schema, to, .. } if schema.stage == Stage::Fit => Some((schema.name.to_string(), to(field))),
            _ => None,
        }
    }
}

/// The value of `schema`'s parameter in `p`, checked and in canonical form.
pub fn checked_value(method: &str, schema: &ParamSchema, p: &ParamMap) -> std::result::Result<ParamValue, ParamError> {
    match p.get(schema.name) {
        Some(v) => schema.check(method, v),
        None if schema.stage == Stage::Evaluation => Ok(schema.default.clone()),
        None => Err(ParamError::Invalid { method: method.into(), name: schema.name.into(), expected: schema.kind.to_string(), got: "no value".into() }),
    }
}

/// A struct declared with `declare_params!`: its schema, `build` and `params()`.
pub trait Declared: Sized {
    /// Which registry entry an instance belongs to, for structs that serve several (`()` for
    /// the others).
    type Entry: Copy;
    /// The entry of this instance.
    fn entry(&self) -> Self::Entry;
    /// The schema of `entry`, in declaration order.
    fn schema(entry: Self::Entry) -> Vec<ParamSchema>;
    /// The instance from `p` (the output of [`MethodInfo::resolve`]): every value is checked
    /// against its schema and converted to its field's type. `method` names the entry in errors.
    fn from_map(method: &str, entry: Self::Entry, p: &ParamMap) -> std::result::Result<Self, ParamError>;
    /// The instance's fit-stage parameters under their schema names (the inverse of
    /// [`Declared::from_map`]; what [`Embedder::params`] returns).
    fn to_params(&self) -> ParamMap;
    /// The instance of `entry` at the schema's defaults.
    fn defaults(entry: Self::Entry) -> Self {
        let p: ParamMap = Self::schema(entry).into_iter().map(|s| (s.name.to_string(), s.default)).collect();
        Self::from_map("defaults", entry, &p).unwrap_or_else(|e| panic!("the schema's defaults do not build: {e}"))
    }
}

/// The registry's `build` for a declared method: the instance from a resolved map, checked, as
/// [`Checked`] (so its fits do not check again).
pub fn build<M: Declared + Embedder + 'static>(method: &'static str, entry: M::Entry, p: &ParamMap) -> Result<Box<dyn Embedder>> {
    Ok(Box::new(Checked(M::from_map(method, entry, p)?)))
}

/// A method instance whose parameters have passed its schema: made by the registry's `build` or
/// by [`Checked::new`], and unchangeable after (read it through `Deref`, take it back with
/// [`Checked::into_inner`]). Its [`Embedder::fit_with`] skips the schema check that an unchecked
/// instance gets on every fit.
#[derive(Debug, Clone)]
pub struct Checked<M>(M);

impl<M: Embedder> Checked<M> {
    /// Checks `method`'s parameters against its registry entry's schema.
    pub fn new(method: M) -> std::result::Result<Checked<M>, ParamError> {
        method.info().check(&method.params())?;
        Ok(Checked(method))
    }
}

impl<M> Checked<M> {
    /// The instance.
    pub fn into_inner(self) -> M {
        self.0
    }
}

impl<M> std::ops::Deref for Checked<M> {
    type Target = M;
    fn deref(&self) -> &M {
        &self.0
    }
}

impl<M: Embedder> Embedder for Checked<M> {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn info(&self) -> MethodInfo {
        self.0.info()
    }
    fn params(&self) -> ParamMap {
        self.0.params()
    }
    fn check_params(&self, _info: &MethodInfo) -> Result<()> {
        // checked when made, unchangeable since
        Ok(())
    }
    fn fit_checked(&self, input: &FitInput) -> Result<Fitted> {
        self.0.fit_checked(input)
    }
}

/// Declares a method's parameter struct with one line per parameter; see the [module
/// documentation](crate::api::declare).
macro_rules! declare_params {
    // several registry entries
    (
        entry $entry:ident : $entry_ty:ty = $of:expr;
        $(#[$attr:meta])*
        $vis:vis struct $name:ident { $($body:tt)* }
    ) => {
        $crate::api::declare::declare_params!(@parse [$(#[$attr])* $vis struct $name] [$entry : $entry_ty = $of] [] [] $($body)*);
    };
    // one registry entry: also `Default` from the schema's defaults
    (
        $(#[$attr:meta])*
        $vis:vis struct $name:ident { $($body:tt)* }
    ) => {
        $crate::api::declare::declare_params!(@parse [$(#[$attr])* $vis struct $name] [__entry : () = |_| ()] [] [] $($body)*);
        impl ::std::default::Default for $name {
            /// The schema's defaults.
            fn default() -> $name {
                <$name as $crate::api::declare::Declared>::defaults(())
            }
        }
    };
    // a parameter the struct does not hold
    (@parse $head:tt $entry:tt [$($fields:tt)*] [$($items:tt)*] $(#[$fattr:meta])* _ = $decl:expr, $($rest:tt)*) => {
        $crate::api::declare::declare_params!(@parse $head $entry [$($fields)*] [$($items)* (only $decl)] $($rest)*);
    };
    // a field
    (@parse $head:tt $entry:tt [$($fields:tt)*] [$($items:tt)*] $(#[$fattr:meta])* $fvis:vis $field:ident : $ty:ty = $decl:expr, $($rest:tt)*) => {
        $crate::api::declare::declare_params!(@parse $head $entry
            [$($fields)* ($(#[$fattr])* $fvis $field : $ty = $decl)]
            [$($items)* (field $field : $ty = $decl)]
            $($rest)*);
    };
    (@parse
        [$(#[$attr:meta])* $vis:vis struct $name:ident]
        [$entry:ident : $entry_ty:ty = $of:expr]
        [$(($(#[$fattr:meta])* $fvis:vis $field:ident : $ty:ty = $decl:expr))*]
        [$($item:tt)*]
    ) => {
        $(#[$attr])*
        $vis struct $name {
            $($(#[$fattr])* $fvis $field: $ty,)*
        }

        impl $crate::api::declare::Declared for $name {
            type Entry = $entry_ty;
            fn entry(&self) -> $entry_ty {
                let of: fn(&$name) -> $entry_ty = $of;
                of(self)
            }
            #[allow(unused_variables, unused_mut)]
            fn schema($entry: $entry_ty) -> ::std::vec::Vec<$crate::api::ParamSchema> {
                let mut schema = ::std::vec::Vec::new();
                $($crate::api::declare::declare_params!(@schema schema $item);)*
                schema
            }
            #[allow(unused_variables)]
            fn from_map(method: &str, $entry: $entry_ty, p: &$crate::api::ParamMap) -> ::std::result::Result<$name, $crate::api::ParamError> {
                $($crate::api::declare::declare_params!(@check method p $item);)*
                ::std::result::Result::Ok($name {
                    $($field: $crate::api::declare::IntoDecl::<$ty>::into_decl($decl).extract(method, p)?,)*
                })
            }
            #[allow(unused_variables, unused_mut)]
            fn to_params(&self) -> $crate::api::ParamMap {
                let $entry: $entry_ty = $crate::api::declare::Declared::entry(self);
                let this = self;
                let mut map = $crate::api::ParamMap::new();
                $($crate::api::declare::declare_params!(@param map this $item);)*
                map
            }
        }
    };
    (@schema $schema:ident (field $field:ident : $ty:ty = $decl:expr)) => {
        if let ::std::option::Option::Some(s) = $crate::api::declare::IntoDecl::<$ty>::into_decl($decl).into_schema() {
            $schema.push(s);
        }
    };
    (@schema $schema:ident (only $decl:expr)) => {
        $schema.push($decl);
    };
    (@check $method:ident $p:ident (field $field:ident : $ty:ty = $decl:expr)) => {};
    (@check $method:ident $p:ident (only $decl:expr)) => {
        $crate::api::declare::checked_value($method, &$decl, $p)?;
    };
    (@param $map:ident $this:ident (field $field:ident : $ty:ty = $decl:expr)) => {
        if let ::std::option::Option::Some((k, v)) = $crate::api::declare::IntoDecl::<$ty>::into_decl($decl).param_of(&$this.$field) {
            $map.insert(k, v);
        }
    };
    (@param $map:ident $this:ident (only $decl:expr)) => {{
        let s: $crate::api::ParamSchema = $decl;
        if s.stage == $crate::api::Stage::Fit {
            $map.insert(s.name.to_string(), s.default);
        }
    }};
}
pub(crate) use declare_params;

/// Declares an enum that is the type of a choice parameter, each variant with the option that
/// names it (`Kpca = "kpca"`), and implements [`ParamChoice`] for it. `Enum::NAMES` lists the
/// options in declaration order.
macro_rules! param_choice {
    (
        $(#[$attr:meta])*
        $vis:vis enum $name:ident { $($(#[$vattr:meta])* $variant:ident = $option:literal,)* }
    ) => {
        $(#[$attr])*
        $vis enum $name {
            $($(#[$vattr])* $variant,)*
        }

        impl $name {
            /// The options naming the values, in declaration order.
            pub const NAMES: &'static [&'static str] = &[$($option),*];
        }

        impl $crate::api::declare::ParamChoice for $name {
            fn from_name(name: &str) -> ::std::option::Option<$name> {
                match name {
                    $($option => ::std::option::Option::Some($name::$variant),)*
                    _ => ::std::option::Option::None,
                }
            }
            fn name(&self) -> &'static str {
                match self {
                    $($name::$variant => $option,)*
                }
            }
        }
    };
}
pub(crate) use param_choice;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::info::{auto, choice, dim, float_in, int, positive};
    use crate::api::params::{closed, open};
    use std::sync::atomic::{AtomicUsize, Ordering};

    param_choice! {
        /// A test choice.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Shape {
            /// Round.
            Round = "round",
            /// Square.
            Square = "square",
        }
    }

    static PARAMS_CALLS: AtomicUsize = AtomicUsize::new(0);

    declare_params! {
        /// A test method.
        #[derive(Debug, Clone)]
        pub struct Toy {
            /// Target dimension.
            pub dim: usize = dim(),
            /// Named differently in the schema.
            pub c: f64 = float_in("C", open(0.0), closed(f64::INFINITY), 1.0, "penalty"),
            /// `None` = auto.
            pub k: Option<usize> = auto(int("k", 2, 2, "neighbours")),
            /// A choice.
            pub shape: Shape = choice("shape", Shape::NAMES, "square", "shape"),
            /// Not a parameter.
            pub knob: u8 = fixed(7),
            _ = int("n_selected", 0, 0, "evaluation only").evaluation_stage(),
            /// After a parameter it does not hold.
            pub rate: f64 = positive("rate", 0.5, "rate"),
        }
    }

    impl Embedder for Toy {
        fn name(&self) -> &'static str {
            "toy"
        }
        fn info(&self) -> MethodInfo {
            info()
        }
        fn params(&self) -> ParamMap {
            PARAMS_CALLS.fetch_add(1, Ordering::SeqCst);
            self.to_params()
        }
        fn fit_checked(&self, input: &FitInput) -> Result<Fitted> {
            Ok(Fitted::closed_form(input.x.to_owned()))
        }
    }

    fn info() -> MethodInfo {
        MethodInfo {
            name: "toy",
            summary: "",
            reference: "",
            version: 1,
            output: crate::api::OutputKind::Embedding,
            needs_labels: false,
            accepts_init: false,
            inductive: false,
            randomised: false,
            params: Toy::schema(()),
            build: |p| build::<Toy>("toy", (), p),
        }
    }

    #[test]
    fn the_declaration_gives_schema_defaults_build_and_params() {
        let schema = Toy::schema(());
        let names: Vec<_> = schema.iter().map(|s| s.name).collect();
        assert_eq!(names, ["dim", "C", "k", "shape", "n_selected", "rate"]);
        assert_eq!(schema[2].kind.to_string(), "\"auto\" or integer >= 2");
        assert_eq!(schema[4].stage, Stage::Evaluation);
        let d = Toy::default();
        assert_eq!((d.dim, d.c, d.k, d.shape, d.knob, d.rate), (2, 1.0, None, Shape::Square, 7, 0.5));
        let given: ParamMap =
            [("C".to_string(), ParamValue::Int(3)), ("k".into(), ParamValue::Int(5)), ("shape".into(), ParamValue::Str("round".into()))].into_iter().collect();
        let resolved = info().resolve(&given).unwrap();
        let t = Toy::from_map("toy", (), &resolved).unwrap();
        assert_eq!((t.c, t.k, t.shape), (3.0, Some(5), Shape::Round));
        let mut fit_stage = resolved.clone();
        fit_stage.remove("n_selected");
        assert_eq!(t.to_params(), fit_stage);
    }

    #[test]
    fn build_checks_values_and_refuses_an_unresolved_dimension() {
        let mut p = info().resolve(&ParamMap::new()).unwrap();
        p.insert("C".into(), ParamValue::Float(-1.0));
        let e = Toy::from_map("toy", (), &p).unwrap_err().to_string();
        assert_eq!(e, "method 'toy': parameter 'C' must be float in (0.0, inf], got -1.0");
        let mut p = info().resolve(&ParamMap::new()).unwrap();
        p.insert("dim".into(), ParamValue::Str("energy".into()));
        let e = Toy::from_map("toy", (), &p).unwrap_err().to_string();
        assert!(e.contains("'dim'") && e.contains("resolved against a data set"), "{e}");
        p.remove("dim");
        assert!(Toy::from_map("toy", (), &p).unwrap_err().to_string().contains("got no value"));
    }

    /// A checked instance is checked once, when made; an unchecked one at every fit.
    #[test]
    fn checked_instances_are_checked_once() {
        let x = ndarray::Array2::from_shape_fn((5, 2), |(i, j)| (i * 2 + j * j) as f64);
        let calls = || PARAMS_CALLS.load(Ordering::SeqCst);
        let (_, m) = info().instantiate(&ParamMap::new()).unwrap();
        let before = calls();
        m.fit(x.view(), 0).unwrap();
        m.fit(x.view(), 1).unwrap();
        assert_eq!(calls(), before, "the registry's instance was checked by its build");
        let checked = Checked::new(Toy::default()).unwrap();
        let after_new = calls();
        assert!(after_new > before);
        checked.fit(x.view(), 0).unwrap();
        assert_eq!(calls(), after_new);
        Toy::default().fit(x.view(), 0).unwrap();
        assert!(calls() > after_new, "an unchecked instance is checked at its fit");
        let bad = Toy { c: 0.0, ..Toy::default() };
        assert!(Checked::new(bad.clone()).unwrap_err().to_string().contains("'C'"));
        assert!(matches!(bad.fit(x.view(), 0), Err(crate::api::MethodError::Param(_))));
    }
}
