pub mod a;
